"""OpenAI Chat Completions and Responses, and every OpenAI-compatible server."""
