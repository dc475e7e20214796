"""Local servers that speak real upstream wire protocols, so tests exercise our HTTP clients."""
