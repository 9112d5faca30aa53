"""A FastMCP server (the official Python SDK) that needs a real card token and chains an id, for the
tests of `calltape replay --fill` and of following created ids.

Usage: python pay_server.py

`pay(cardToken, amount)` refuses a token that is not one (a recorded "[REDACTED]" among them) and
answers a payment id that is new in every process; `refund(paymentId)` refuses an id this process
did not make; `payment(paymentId)` answers what it knows of one.
"""

import secrets

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import BaseModel

mcp = FastMCP("pay-test-server")

# Fresh in every process, so a replay against a new process sees new ids.
_next = [1000 + secrets.randbelow(8000)]
_payments = {}


class Payment(BaseModel):
    paymentId: str
    status: str
    # The token echoed back, as careless servers do: neither a recording nor a report may hold it.
    card: str


@mcp.tool()
def pay(cardToken: str, amount: float) -> Payment:
    """Pay an amount with a card token."""
    if not cardToken.startswith("tok_"):
        raise ToolError("card token refused: it is not a card token")
    payment_id = f"pay_{_next[0]}"
    _next[0] += 1
    _payments[payment_id] = amount
    return Payment(paymentId=payment_id, status="paid", card=cardToken)


@mcp.tool()
def refund(paymentId: str) -> dict:
    """Refund a payment."""
    if paymentId not in _payments:
        raise ToolError(f"unknown payment {paymentId}")
    return {"status": "refunded", "paymentId": paymentId, "note": f"refund of {paymentId} queued"}


if __name__ == "__main__":
    mcp.run()
