"""Contact data in story text: detected, and scrubbed before anything is extracted or stored
in the graph (emails, phone numbers, ID numbers, street addresses)."""

from __future__ import annotations

import re

# Contact data (PII)

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)
_PHONE = re.compile(
    r"(?<![\w-])(?:"
    r"\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){1,3}"  # international
    r"|(?:1[\s.-])?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}"  # North American
    r"|\d{3}[\s.-]\d{4}"  # local seven digits
    r")(?![\w-])"
)
_ID_NUMBER = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")  # SSN-shaped
_PO_BOX = re.compile(r"\bP\.?\s?O\.?\s*Box\s+\d+\b", re.IGNORECASE)
_STREET_SUFFIX = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl|Way|Terrace"
    r"|Ter|Circle|Cir|Highway|Hwy|Parkway|Pkwy|Trail|Trl|Route|Rte|Pike|Row|Square|Sq)"
)
#: "14 Elm Street", "221B Baker St.", "1600 North Maple Avenue, Apt 4": the house number
#: (and any unit) is contact data, the street is a place.
_HOUSE_ADDRESS = re.compile(
    r"(?<![\w.-])\d{1,6}[A-Za-z]?(?:-\d{1,4})?,?\s+"
    r"(?P<street>(?:(?:[NSEW]\.?|North|South|East|West)\s+)?(?:[A-Z0-9][\w'.-]*\s+){1,4}"
    + _STREET_SUFFIX
    + r"\b\.?)"
    r"(?:,?\s*(?:Apt|Apartment|Unit|Suite|Ste|#)\.?\s*#?\w+)?"
)
_ZIP_AFTER_STATE = re.compile(r"\b(?P<state>[A-Z]{2})\s+\d{5}(?:-\d{4})?\b")

EMAIL_MARK, PHONE_MARK, NUMBER_MARK, ADDRESS_MARK = "[email]", "[phone]", "[number]", "[address]"


def has_contact_data(text: str) -> bool:
    """An email address, phone number, identity number or PO box (not a bare street)."""
    return bool(_EMAIL.search(text) or _ID_NUMBER.search(text) or _PHONE.search(text) or _PO_BOX.search(text))


def scrub_pii(text: str) -> str:
    """Redact emails, phone and identity numbers and PO boxes; drop house numbers and postal codes
    from street addresses ("14 Elm Street" -> "Elm Street")."""
    text = _EMAIL.sub(EMAIL_MARK, text)
    text = _ID_NUMBER.sub(NUMBER_MARK, text)
    text = _PHONE.sub(PHONE_MARK, text)
    text = _PO_BOX.sub(ADDRESS_MARK, text)
    text = _HOUSE_ADDRESS.sub(lambda m: m.group("street"), text)
    return _ZIP_AFTER_STATE.sub(lambda m: m.group("state"), text)
