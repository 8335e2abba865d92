"""HTTP transport: the transport protocol, its aiohttp implementation, SSE decoding, retries."""
