"""Value codecs: how a template writes a string value, learned from probe renderings, and how to
read it back (whole, or a piece at a time while a model streams).

A :class:`Codec` is stored as its spec string:

==============================  =====================================================================
spec                            what writes it
==============================  =====================================================================
``raw``                         ``{{ v }}``
``json``, ``json(ascii)``       ``json.dumps`` (``ensure_ascii`` off / on); ``{{ v | tojson }}``
``json(ascii,html)``            Jinja's own ``tojson`` (``\\u003c \\u003e \\u0026 \\u0027`` too)
``python``                      ``repr(str)``
``quoted(",backslash,nl)``      ``'"' ~ v | replace('\\\\', '\\\\\\\\') | replace('"', '\\\\"') |
                                replace('\\n', '\\\\n') ~ '"'`` (quote `` " ' ` ``; flags
                                ``backslash nl tab cr``)
``doubled(')``                  ``"'" ~ v | replace("'", "''") ~ "'"``
``shell``                       ``shlex.quote``
``shell(dq)``                   a double-quoted shell word (``\\\\ \\" \\$ \\```)
``percent(%20)``                ``{{ v | urlencode }}``, ``urllib.parse.quote``
``percent(plus)``               ``quote_plus``, Jinja's query-string ``urlencode``; ``safe=...``
``entities(html)``              ``{{ v | e }}`` (``markupsafe.escape``: ``&#34; &#39;``)
``entities(xml)``               ``xml.sax.saxutils.escape``; ``entities(quot,#x27)``: ``html.escape``
``escaped(\\\\ ,=)``            a backslash before each listed character, the value bare
``table({"<": "&lt;"})``        a learned substitution
``ifneeded(" =",json)``         bare unless the value is empty, starts with the quote or holds a
                                listed character, then the inner codec (``json``, ``quoted(...)``,
                                ``doubled(...)``)
==============================  =====================================================================

``bare`` (``json(bare)``, ``quoted(',backslash,bare)``, ``doubled(',bare)``, ``shell(dq,bare)``)
is the same codec with its quotes left to the layout: the value ends before the closing quote.

:func:`learn_codec` picks a codec from (value, rendered) samples of :data:`PROBE_STRINGS`;
:func:`learn_spelling` and :func:`decode_scalar` read booleans, null and numbers.
"""

from __future__ import annotations

from .base import IncrementalDecoder
from .codec import Codec
from .lang import Form
from .learn import PROBE_STRINGS, CodecChoice, learn_codec, learn_codec_explained
from .scalars import NOT_SCALAR, NotScalar, Spellings, decode_number, decode_scalar, learn_spelling

__all__ = [
    "NOT_SCALAR",
    "PROBE_STRINGS",
    "Codec",
    "CodecChoice",
    "Form",
    "IncrementalDecoder",
    "NotScalar",
    "Spellings",
    "decode_number",
    "decode_scalar",
    "learn_codec",
    "learn_codec_explained",
    "learn_spelling",
]
