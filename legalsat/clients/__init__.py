"""Ways in: the command line, the HTTP client (`http`) and the Triton client (`triton`)."""
