"""The agent layer: prompts, model clients, memory and the agent API.

- ``prompt``: ``AgentPrompt`` (what a runtime asks of a model), ``AgentModelResult`` (what comes back) and the
  ``ModelClient`` protocol;
- ``items``: memory items (plain JSON-able dicts in the Responses item shape) and their conversions, from
  ``item_shapes`` (constructors, classification), ``chat_items`` (to Chat messages) and ``responses_items``
  (to Responses input);
- ``chat_client`` / ``responses_client``: the two protocol adapters, ``ChatModelClient`` and
  ``ResponsesModelClient``;
- ``memory``: the ``Memory`` protocol, ``InMemoryMemory`` and the pair-aware ``WindowedMemory``.

This package's ``__init__`` imports nothing, so importing one part never drags in the others.
"""
