"""mmzip: placeholder until the helper is written."""
