"""Ways in: the command line (and, later, the HTTP and Triton clients)."""
