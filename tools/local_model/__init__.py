"""A real small language model on loopback, offline: llama.cpp's own HTTP server
(the `xllamacpp` wheel) hosting a pinned GGUF assembled from registry packages.

See README.md beside this file; scripts/local-model.sh is the entry point.
"""
