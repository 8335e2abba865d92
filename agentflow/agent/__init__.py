"""The agent layer: prompts, model clients, memory and the agent API.

- ``prompt``: ``AgentPrompt`` (what a runtime asks of a model), ``AgentModelResult`` (what comes back) and the
  ``ModelClient`` protocol;
- ``items``: memory items (plain JSON-able dicts in the Responses item shape) and their conversions, from
  ``item_shapes`` (constructors, ``Message`` values as items, classification), ``chat_items`` (to Chat
  messages), ``responses_items`` (to Responses input) and ``item_json`` (a conversation as JSON);
- ``chat_client`` / ``responses_client``: the two protocol adapters, ``ChatModelClient`` and
  ``ResponsesModelClient``;
- ``fallback_client``: ``FallbackModelClient``, a model client that tries the next model when one fails;
- ``memory``: the ``Memory`` protocol, ``InMemoryMemory`` and the pair-aware ``WindowedMemory``;
- ``session`` / ``turns``: conversations whose runs share a memory and take turns on it.

This package's ``__init__`` imports nothing, so importing one part never drags in the others.
"""
