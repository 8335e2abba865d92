"""``make demo`` and what it shares with the CLI: agents end to end, rendered live in the terminal.

- ``scenario``: the demo itself (``python -m agentflow.demo``): ReAct on Chat Completions and on Responses,
  CodeAct and DeepResearch, through the real HTTP clients;
- ``responder``: the bundled scripted model that answers those requests offline (a ``ScriptedServer``
  responder);
- ``render``: the live terminal rendering of a run's events (and the ``--json`` line form);
- ``tools``: the safe built-in tools (``calculator``, ``utc_now``).

Nothing here is imported by ``import agentflow``.
"""
