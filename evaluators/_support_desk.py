"""A small, deterministic "support desk" agent that the example evaluators evaluate.

It stands in for an LLM agent so that ``agenteval run evaluators/`` works offline: it reads a
customer's question, routes it to tools (an in-memory order table, the refund policy,
shipment tracking, shipping rates, a hand-off to a human) and answers in plain sentences.
It records which tools it called, in order, so evaluators can check the route as well as the
answer. Nothing here is random, and "today" is fixed, so every answer is reproducible.

The file name starts with ``_``, so ``agenteval run`` does not treat it as an evaluator file;
the evaluators import it as a sibling module (``from _support_desk import SupportDesk``).

Example::

    desk = SupportDesk()
    reply = desk.ask("Where is my order A1001?")
    reply.text   # 'Order A1001 shipped with UPS on 11 June 2024 and should arrive by ...'
    reply.tools  # ('lookup_order', 'track_shipment')
    desk.ask_json("Where is my order A1001?")  # the same reply as a JSON document
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

TODAY = date(2024, 6, 14)
"""The date the desk believes it is (fixed, so that refund windows are reproducible)."""

RETURN_WINDOW_DAYS = 30
REFUND_BUSINESS_DAYS = 5
RESTOCKING_FEE_PERCENT = 15

OrderStatus = Literal["processing", "shipped", "delivered", "cancelled"]


@dataclass(frozen=True)
class Order:
    """One row of the in-memory order table."""

    id: str
    customer: str
    items: tuple[str, ...]
    total: float
    status: OrderStatus
    placed_on: date
    category: str = "home"
    final_sale: bool = False
    carrier: str | None = None
    tracking: str | None = None
    shipped_on: date | None = None
    eta: date | None = None
    delivered_on: date | None = None
    cancelled_on: date | None = None


ORDERS: dict[str, Order] = {
    order.id: order
    for order in (
        Order(
            "A1001",
            "Alice Martin",
            ("Blue enamel kettle",),
            49.90,
            "shipped",
            date(2024, 6, 10),
            carrier="UPS",
            tracking="1Z84F3920347719021",
            shipped_on=date(2024, 6, 11),
            eta=date(2024, 6, 17),
        ),
        Order(
            "A1002",
            "Bob Chen",
            ("Wireless headphones",),
            129.00,
            "delivered",
            date(2024, 5, 20),
            category="electronics",
            carrier="DHL",
            tracking="JD014600006281234567",
            shipped_on=date(2024, 5, 21),
            delivered_on=date(2024, 5, 24),
        ),
        Order(
            "A1003",
            "Chiara Rossi",
            ("Linen tablecloth", "Napkin set"),
            74.50,
            "processing",
            date(2024, 6, 13),
        ),
        Order(
            "A1004",
            "Dmitri Ivanov",
            ("Wool winter coat",),
            210.00,
            "delivered",
            date(2024, 4, 2),
            carrier="UPS",
            tracking="1Z84F3920311102468",
            shipped_on=date(2024, 4, 3),
            delivered_on=date(2024, 4, 8),
        ),
        Order(
            "A1005",
            "Emma Weber",
            ("Clearance floor lamp",),
            39.00,
            "delivered",
            date(2024, 6, 1),
            final_sale=True,
            carrier="DHL",
            tracking="JD014600006289990001",
            shipped_on=date(2024, 6, 2),
            delivered_on=date(2024, 6, 5),
        ),
        Order(
            "A1006",
            "Farid Haddad",
            ("Ceramic mug set",),
            35.00,
            "cancelled",
            date(2024, 5, 30),
            cancelled_on=date(2024, 6, 1),
        ),
    )
}

Intent = Literal[
    "greeting", "refund", "cancel", "tracking", "order_details", "shipping_rates", "handoff"
]


@dataclass(frozen=True)
class Reply:
    """What the desk answered, how it understood the question, and the tools it called."""

    text: str
    intent: Intent
    tools: tuple[str, ...] = ()
    order_id: str | None = None
    order: dict[str, str | float | None] | None = None

    def to_json(self) -> str:
        """The reply as the desk's JSON API returns it."""
        return json.dumps(
            {
                "intent": self.intent,
                "order_id": self.order_id,
                "tools": list(self.tools),
                "order": self.order,
                "answer": self.text,
            },
            ensure_ascii=False,
        )


_ORDER_ID = re.compile(r"\b([A-Za-z]\d{4})\b")
_GREETING = re.compile(r"^\s*(hi|hello|hey|good (morning|afternoon|evening))\b[\s!,.]*", re.I)
_REFUND = re.compile(
    r"\b(refund\w*|return(ed|s|ing)?|money back|send(\s+\w+)?\s+back|reimburse\w*)\b", re.I
)
_CANCEL = re.compile(r"\bcancel(l?ed|ling)?\b", re.I)
_RATES = re.compile(
    r"\b(how much|cost|costs|price|fee|fees|free shipping|express|international|abroad"
    r"|ship to|deliver to)\b",
    re.I,
)
_SHIPPING = re.compile(
    r"\b(where|track(ing)?|ship(ped|ping)?|deliver(y|ed)?|arrive|status|parcel|package)\b",
    re.I,
)
_DETAILS = re.compile(r"\b(what did i (order|buy)|items?|contents?|total|receipt|details)\b", re.I)
_DAMAGED = re.compile(r"\b(damaged|broken|defective|faulty|cracked)\b", re.I)
_ELECTRONICS = re.compile(r"\b(electronics?|headphones?|laptops?|phones?|speakers?)\b", re.I)
_FINAL_SALE = re.compile(r"\b(final[- ]sale|clearance|sale items?)\b", re.I)
_TIMELINE = re.compile(r"\b(how long|when|how soon|how many days)\b", re.I)
_INTERNATIONAL = re.compile(r"\b(international|abroad|overseas|canada|uk|europe|eu)\b", re.I)


def _day(value: date) -> str:
    return f"{value.day} {value:%B %Y}"


def _money(value: float) -> str:
    return f"${value:.2f}"


@dataclass
class SupportDesk:
    """The demo agent: ``ask`` answers a question, ``ask_json`` is its JSON API.

    ``orders`` is the order table the tools read (the built-in one by default);
    ``calls`` lists the tools called by the last question, in order.
    """

    orders: dict[str, Order] = field(default_factory=lambda: dict(ORDERS))
    calls: list[str] = field(default_factory=list)

    # -- the agent -------------------------------------------------------------------
    def ask(self, question: str) -> Reply:
        """Route ``question`` to the right tools and answer it."""
        self.calls = []
        match = _ORDER_ID.search(question)
        order_id = match.group(1).upper() if match else None
        if _REFUND.search(question):
            return self._refund(question, order_id)
        if _CANCEL.search(question):
            return self._cancel(order_id)
        if _RATES.search(question):
            return self._shipping_rates(question)
        if order_id and _DETAILS.search(question):
            return self._order_details(order_id)
        if _SHIPPING.search(question) or order_id:
            return self._tracking(order_id)
        if _GREETING.match(question) and len(_GREETING.sub("", question).split()) <= 3:
            return Reply(
                "Hello! I'm the support desk assistant: I can look up orders, track "
                "shipments and explain our refund policy. How can I help you today?",
                "greeting",
            )
        return self._handoff(question)

    def ask_json(self, question: str) -> str:
        """Answer ``question`` as a JSON document: intent, order_id, tools, order, answer."""
        return self.ask(question).to_json()

    # -- tools -----------------------------------------------------------------------
    def lookup_order(self, order_id: str) -> Order | None:
        """Tool: find an order by its number."""
        self.calls.append("lookup_order")
        return self.orders.get(order_id)

    def track_shipment(self, order: Order) -> dict[str, str | None]:
        """Tool: the carrier's view of a shipped order."""
        self.calls.append("track_shipment")
        return {
            "carrier": order.carrier,
            "tracking": order.tracking,
            "eta": order.eta.isoformat() if order.eta else None,
            "delivered_on": order.delivered_on.isoformat() if order.delivered_on else None,
        }

    def refund_policy(self, topic: str = "general") -> str:
        """Tool: the refund policy text for a topic."""
        self.calls.append("refund_policy")
        policies = {
            "general": (
                f"You can return most items within {RETURN_WINDOW_DAYS} days of delivery for "
                f"a full refund. Refunds go back to your original payment method within "
                f"{REFUND_BUSINESS_DAYS} business days of the item reaching our warehouse."
            ),
            "damaged": (
                "Damaged or defective items get a full refund, including shipping, with no "
                f"restocking fee. Send us a photo within {RETURN_WINDOW_DAYS} days of delivery "
                "and we will email you a prepaid return label."
            ),
            "electronics": (
                f"Electronics can be returned within {RETURN_WINDOW_DAYS} days of delivery. "
                f"Unopened electronics get a full refund; opened electronics carry a "
                f"{RESTOCKING_FEE_PERCENT}% restocking fee."
            ),
            "final_sale": "Final-sale and clearance items cannot be returned or refunded.",
            "timeline": (
                f"Refunds go back to your original payment method within "
                f"{REFUND_BUSINESS_DAYS} business days of the item reaching our warehouse."
            ),
        }
        return policies[topic]

    def shipping_rates(self, international: bool) -> str:
        """Tool: shipping prices and delivery times."""
        self.calls.append("shipping_rates")
        if international:
            return (
                "We ship to the EU, the UK and Canada. International shipping costs $19.00 "
                "and takes 7 to 14 business days."
            )
        return (
            "Standard shipping is free on orders over $50 and costs $4.99 otherwise; it "
            "takes 3 to 5 business days. Express shipping costs $12.00 and takes 1 to 2 "
            "business days."
        )

    def handoff_to_human(self, question: str) -> str:
        """Tool: open a ticket for a human colleague; returns the ticket number."""
        self.calls.append("handoff_to_human")
        return f"T-{zlib.crc32(question.strip().lower().encode()) % 100000:05d}"

    # -- routes ----------------------------------------------------------------------
    def _reply(self, text: str, intent: Intent, order: Order | None = None) -> Reply:
        return Reply(
            text=text,
            intent=intent,
            tools=tuple(self.calls),
            order_id=order.id if order else None,
            order=_order_view(order) if order else None,
        )

    def _not_found(self, order_id: str, intent: Intent) -> Reply:
        return Reply(
            text=(
                f"I couldn't find an order with the number {order_id}. Please check the "
                "number in your confirmation email; it looks like A1234."
            ),
            intent=intent,
            tools=tuple(self.calls),
            order_id=order_id,
        )

    def _ask_for_order(self, intent: Intent, what: str) -> Reply:
        return Reply(
            f"I can {what} for you. What is your order number? You'll find it in your "
            "confirmation email.",
            intent,
        )

    def _refund(self, question: str, order_id: str | None) -> Reply:
        if order_id is None:
            if _DAMAGED.search(question):
                text = "I'm sorry it arrived damaged. " + self.refund_policy("damaged")
            elif _FINAL_SALE.search(question):
                text = self.refund_policy("final_sale")
            elif _ELECTRONICS.search(question):
                text = self.refund_policy("electronics")
            elif _TIMELINE.search(question):
                text = self.refund_policy("timeline")
            else:
                text = (
                    self.refund_policy("general") + " To start a return, tell me your order number."
                )
            return self._reply(text, "refund")
        order = self.lookup_order(order_id)
        if order is None:
            return self._not_found(order_id, "refund")
        if order.status == "cancelled":
            cancelled = _day(order.cancelled_on) if order.cancelled_on else "an earlier date"
            return self._reply(
                f"Order {order.id} was cancelled on {cancelled}, and {_money(order.total)} "
                "was refunded to your original payment method.",
                "refund",
                order,
            )
        if order.status == "processing":
            return self._reply(
                f"Order {order.id} has not shipped yet, so there is nothing to return: I can "
                f"cancel it instead, for a full refund of {_money(order.total)}.",
                "refund",
                order,
            )
        if order.status == "shipped":
            self.refund_policy("general")
            return self._reply(
                f"Order {order.id} is still on its way. Once it arrives you have "
                f"{RETURN_WINDOW_DAYS} days to return it for a full refund.",
                "refund",
                order,
            )
        topic = "final_sale" if order.final_sale else order.category
        policy = self.refund_policy(topic if topic in ("final_sale", "electronics") else "general")
        if order.final_sale:
            return self._reply(
                f"Order {order.id} is not eligible for a refund: the {order.items[0]} was a "
                "final-sale item, and final-sale items cannot be returned.",
                "refund",
                order,
            )
        delivered = order.delivered_on or order.placed_on
        days = (TODAY - delivered).days
        if days > RETURN_WINDOW_DAYS:
            return self._reply(
                f"Order {order.id} is not eligible for a refund: it was delivered {days} days "
                f"ago, and returns are accepted within {RETURN_WINDOW_DAYS} days of delivery.",
                "refund",
                order,
            )
        text = (
            f"Order {order.id} is eligible for a refund: it was delivered {days} days ago, "
            f"within our {RETURN_WINDOW_DAYS}-day return window. Once we receive the item, "
            f"{_money(order.total)} goes back to your original payment method within "
            f"{REFUND_BUSINESS_DAYS} business days."
        )
        if "restocking fee" in policy:
            text += (
                f" If the item has been opened, a {RESTOCKING_FEE_PERCENT}% restocking fee applies."
            )
        return self._reply(text, "refund", order)

    def _cancel(self, order_id: str | None) -> Reply:
        if order_id is None:
            return self._ask_for_order("cancel", "check whether your order can be cancelled")
        order = self.lookup_order(order_id)
        if order is None:
            return self._not_found(order_id, "cancel")
        if order.status == "processing":
            return self._reply(
                f"Order {order.id} has not shipped yet, so it can still be cancelled. I've "
                f"asked the warehouse to stop it; {_money(order.total)} will be refunded "
                f"within {REFUND_BUSINESS_DAYS} business days.",
                "cancel",
                order,
            )
        if order.status == "cancelled":
            return self._reply(f"Order {order.id} is already cancelled.", "cancel", order)
        return self._reply(
            f"Order {order.id} has already {order.status}, so it can no longer be cancelled. "
            f"You can return it within {RETURN_WINDOW_DAYS} days of delivery instead.",
            "cancel",
            order,
        )

    def _shipping_rates(self, question: str) -> Reply:
        return self._reply(
            self.shipping_rates(bool(_INTERNATIONAL.search(question))), "shipping_rates"
        )

    def _order_details(self, order_id: str) -> Reply:
        order = self.lookup_order(order_id)
        if order is None:
            return self._not_found(order_id, "order_details")
        return self._reply(
            f"Order {order.id}, placed on {_day(order.placed_on)}, contains: "
            f"{', '.join(order.items)}. The total was {_money(order.total)}.",
            "order_details",
            order,
        )

    def _tracking(self, order_id: str | None) -> Reply:
        if order_id is None:
            return self._ask_for_order("tracking", "check where your parcel is")
        order = self.lookup_order(order_id)
        if order is None:
            return self._not_found(order_id, "tracking")
        if order.status == "processing":
            return self._reply(
                f"Order {order.id} is still being prepared in our warehouse and has not "
                "shipped yet. You'll get an email with the tracking number as soon as it "
                "leaves.",
                "tracking",
                order,
            )
        if order.status == "cancelled":
            cancelled = _day(order.cancelled_on) if order.cancelled_on else "an earlier date"
            return self._reply(
                f"Order {order.id} was cancelled on {cancelled}, so there is nothing to track.",
                "tracking",
                order,
            )
        shipment = self.track_shipment(order)
        if order.status == "delivered" and order.delivered_on is not None:
            text = (
                f"Order {order.id} was delivered by {shipment['carrier']} on "
                f"{_day(order.delivered_on)}. If you can't find the parcel, reply here and "
                "we'll open an investigation with the carrier."
            )
        else:
            eta = f" and should arrive by {_day(order.eta)}" if order.eta else ""
            shipped = f" on {_day(order.shipped_on)}" if order.shipped_on else ""
            text = (
                f"Order {order.id} shipped with {shipment['carrier']}{shipped}{eta}. "
                f"Your tracking number is {shipment['tracking']}."
            )
        return self._reply(text, "tracking", order)

    def _handoff(self, question: str) -> Reply:
        ticket = self.handoff_to_human(question)
        return self._reply(
            f"I'm not able to help with that myself, so I've passed your question to a human "
            f"colleague (ticket {ticket}). They usually reply within one business day.",
            "handoff",
        )


def _order_view(order: Order) -> dict[str, str | float | None]:
    return {
        "status": order.status,
        "total": order.total,
        "carrier": order.carrier,
        "tracking": order.tracking,
        "eta": order.eta.isoformat() if order.eta else None,
        "delivered_on": order.delivered_on.isoformat() if order.delivered_on else None,
    }
