"""The provider-neutral model layer: messages, requests, responses, events and errors.

Nothing here does I/O or knows about agents; providers (``agentflow.providers``) map these types
onto a wire protocol, and the agent layer builds on them.
"""
