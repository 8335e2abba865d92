"""Which events a subscriber wants: ``EventTypes`` and its check, ``normalise_event_types``.

Shared by the bus (``subscribe``, ``on``) and the agent API (``agent.stream(types=…)``, ``agent.on``), which
check what they are given where it is written. Pure: no I/O, nothing async.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Sequence
from types import UnionType

from .model.events import Event

__all__ = ["EventTypes", "normalise_event_types"]

EventTypes = type[Event] | UnionType | Sequence[type[Event] | UnionType] | None
"""Which events a subscriber wants (``isinstance`` match): a class, a union of classes (such as
``agentflow.events.TerminalEvent``), a tuple of either, or ``None`` (all)."""


def _is_union(kind: object) -> bool:
    return typing.get_origin(kind) in (UnionType, typing.Union)


def _is_event_class(kind: object) -> bool:
    try:
        return isinstance(kind, type) and issubclass(kind, Event)
    except TypeError:  # a parametrised generic such as ``list[int]``
        return False


def normalise_event_types(types: EventTypes) -> tuple[type[Event], ...] | None:
    """The event classes ``types`` names (``None``: every event), unions flattened; ``TypeError`` if one is
    not an ``Event`` subclass. ``subscribe``, ``on``, ``agent.stream`` and ``agent.on`` check ``types`` so.

    >>> from agentflow.events import TerminalEvent
    >>> from agentflow.model.events import TextDelta
    >>> [cls.__name__ for cls in normalise_event_types((TextDelta, TerminalEvent))]
    ['TextDelta', 'RunFinished', 'RunFailed', 'RunCancelled']
    """
    if types is None:
        return None
    if isinstance(types, str):  # iterating it would report its first letter
        raise TypeError(f"event types must be Event subclasses, not a string: {types!r} (pass the class)")
    kinds: Iterable[object]
    if isinstance(types, type) or _is_union(types):
        kinds = (types,)
    elif isinstance(types, Iterable):
        kinds = types
    else:
        raise TypeError(
            f"event types must be an Event subclass, a union of them, a tuple of those or None, got {types!r}"
        )
    flat: list[type[Event]] = []
    for kind in kinds:
        members = typing.get_args(kind) if _is_union(kind) else (kind,)
        for member in members:
            if not _is_event_class(member):
                where = f" (in {kind!r})" if member is not kind else ""
                raise TypeError(f"event types must be Event subclasses, got {member!r}{where}")
            flat.append(member)
    return tuple(flat)
