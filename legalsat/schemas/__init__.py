"""The one set of pydantic models legalsat speaks over HTTP, on the command line and in Python.

Core data stays in frozen dataclasses (legalsat.terms, legalsat.analyses); these models are
the boundary: they validate untrusted input, name the field of every problem, and convert
to and from the core types.
"""
