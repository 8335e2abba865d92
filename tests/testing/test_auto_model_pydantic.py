"""``schema_value`` on pydantic's schemas: made-up arguments and answers pass pydantic's own validation.

pydantic writes keywords agentflow's walker does not (``$defs`` for every model, ``allOf``, ``prefixItems``,
``anyOf`` of a number and a patterned string for ``Decimal``, ``oneOf`` with a discriminator, ``format``s
such as ``uri``, ``ipv4``, ``duration``); the tool's ``parse_arguments`` hands the values to pydantic.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import ipaddress
import uuid
from typing import Annotated, Any, Literal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pydantic = pytest.importorskip("pydantic")

from pydantic import AnyUrl, BaseModel, Field, conint, conlist, constr  # noqa: E402

from agentflow.runtimes.output import OutputType  # noqa: E402
from agentflow.testing.schema_values import schema_value  # noqa: E402
from agentflow.tools import tool  # noqa: E402


class Size(enum.Enum):
    S = "s"
    L = "l"


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = Field(description="City name")
    zip_code: str | None = Field(None, alias="zipCode", pattern=r"^\d{5}$")


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    barks: int


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


class Order(BaseModel):
    """An order."""

    sku: constr(pattern=r"^[A-Z]{3}-\d{4}$")  # type: ignore[valid-type]
    qty: conint(ge=1, le=99, multiple_of=3) = 3  # type: ignore[valid-type]
    price: decimal.Decimal = Field(gt=0, decimal_places=2)
    ship_to: Address
    pet: Cat | Dog = Field(discriminator="kind")
    tags: set[str] = set()
    sizes: conlist(Size, min_length=1, max_length=2)  # type: ignore[valid-type]
    pair: tuple[int, str]
    when: datetime.datetime
    day: datetime.date | None = None
    wait: datetime.timedelta
    ref: uuid.UUID
    site: AnyUrl
    host: ipaddress.IPv4Address
    ratio: Annotated[float, Field(gt=0, lt=1)]
    tree: Tree
    extra: dict[str, int] = {}


MODELS = [Address, Cat | Dog, Tree, Order]


def _tools() -> list[Any]:
    out = []
    for tp in MODELS:
        for strict in (False, True):

            def fn(value: Any) -> None:
                """Takes a value."""

            fn.__annotations__ = {"value": tp, "return": None}
            try:
                made = tool(strict=strict)(fn)
            except TypeError:
                if not strict:
                    raise
                continue
            out.append(pytest.param(made, id=f"{'strict ' if strict else ''}{tp!r}"))
    return out


@pytest.mark.parametrize("made", _tools())
@given(seed=st.integers(min_value=0, max_value=10**6), fill=st.booleans())
@settings(max_examples=25, deadline=None)
def test_made_up_arguments_pass_pydantic_s_validation(made: Any, seed: int, fill: bool) -> None:
    made.parse_arguments(
        orjson.dumps(schema_value(made.spec.parameters, seed=seed, fill_optional=fill)).decode()
    )


@pytest.mark.parametrize("tp", MODELS, ids=repr)
@given(seed=st.integers(min_value=0, max_value=10**6), fill=st.booleans())
@settings(max_examples=20, deadline=None)
def test_a_made_up_answer_is_read_into_the_model(tp: Any, seed: int, fill: bool) -> None:
    spec = OutputType(tp)
    schema = spec.response_format()["json_schema"]["schema"]
    spec.parse(orjson.dumps(schema_value(schema, seed=seed, fill_optional=fill)).decode())


def test_an_order_reads_as_expected() -> None:
    made = _tools()[-1].values[0]
    order = made.parse_arguments(schema_value(made.spec.parameters))["value"]
    assert isinstance(order, Order)
    assert order.sku == "ABC-0120"  # the pattern written out
    assert order.qty == 3  # the default: optional fields are left out
    assert order.price == decimal.Decimal("1.5")
    assert order.pet == Cat(meows=4)  # the tag is sent, as pydantic's discriminator wants
    assert order.wait == datetime.timedelta(days=10)
