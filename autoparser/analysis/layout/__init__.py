"""Call layouts: the general description of a tool call (pieces, items, value spellings)."""

from .model import KEY_AGAIN, ArgsLayout, CallLayout, Items, Piece, Slot, Values

__all__ = ["KEY_AGAIN", "ArgsLayout", "CallLayout", "Items", "Piece", "Slot", "Values"]
