"""The words the intent rules read: name prefixes, stopwords, the cue phrases of each intent with
their weights, and question heads (generic question vocabulary, not any data set's wording)."""

from __future__ import annotations

import re

from heirloom.contracts.context import Intent


# -- lexicons ---------------------------------------------------------------------------------
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: leading words of a name or alias that are a title or a kinship form, not part of the name
NAME_PREFIXES: frozenset[str] = _words(
    """mr mrs ms miss mx dr doctor prof professor rev reverend sir dame lady lord captain capt
    uncle aunt auntie aunty grandma grandpa granny grandmother grandfather gran nana nanna nan
    papa pop pops grammy gramps cousin great grand big little old"""
)
NAME_SUFFIXES: frozenset[str] = frozenset({"jr", "sr", "ii", "iii", "iv"})
#: last words of a place's name that say what kind of place it is, not which: the words before
#: them name it alone ("Birchwood" for "Birchwood Commons", "Tamarack" for "Tamarack Lake")
PLACE_NAME_HEADS: frozenset[str] = _words(
    """commons lake lakes street avenue road lane drive court square place hall church chapel
    cathedral school academy college university hospital memorial clinic manor farm park cemetery
    gardens garden village estate works centre center station bay island river creek hill hills
    heights falls home"""
)
ARTICLES: frozenset[str] = frozenset({"the", "a", "an"})
#: never a name on their own
STOPWORDS: frozenset[str] = _words(
    """a an the and or but of in on at to for from with by as is was were be been are am it its
    he she him her his hers they them their we us our you your i me my this that these those
    there here who what when where why how do did does not no yes so if then than"""
)
#: English words that are also common given names or surnames: a single-word name matches them
#: only when capitalised inside a sentence ("Rose came" but not "a rose", "Will she")
AMBIGUOUS_WORDS: frozenset[str] = _words(
    """rose may june april august will bill mark grace hope faith joy ray art frank jack sue
    dawn eve ivy holly lily daisy iris pearl ruby amber summer autumn winter penny sandy rusty
    bud chip chuck dean drew gene glen grant guy harry hunter jay jean jewel joe les lee lou
    max mike nick norm pat pete rich rob sky sterling victor violet wade ward brook brooks hill
    field wood woods stone king young brown white green black gray grey page bell long short
    cook baker miller smith taylor turner walker mason carpenter fisher hunter park lane church
    star sun"""
)

Cue = tuple[float, re.Pattern[str]]


def _cues(*pairs: tuple[float, str]) -> tuple[Cue, ...]:
    return tuple((w, re.compile(p, re.IGNORECASE)) for w, p in pairs)


_KIN = (
    r"brothers?|sisters?|siblings?|mother|father|mom|mum|mama|dad|daddy|parents?|sons?|daughters?|"
    r"cousins?|uncles?|aunts?|nephews?|nieces?|in-laws?|grand(?:mother|father|parents?|sons?|"
    r"daughters?|children|kids?|ma|pa)|stepmother|stepfather|half-brother|half-sister|twins?"
)
_EVENT_NOUNS = (
    r"wedding|funeral|reunion|party|celebration|trip|journey|voyage|holiday|vacation|accident|"
    r"fire|flood|storm|crash|graduation|ceremony|birthday|anniversary|christmas|thanksgiving|"
    r"easter|hanukkah|festival|concert|game|match|competition|race|parade|picnic|dance|recital|"
    r"christening|baptism|bar mitzvah|bat mitzvah|retirement|promotion|surgery|strike|diagnosis|"
    r"illness|cancer|stroke|heart attack|operation|military service|army|navy|enlist\w*|deployment"
)
_OBJECT_NOUNS = (
    r"ring|watch|necklace|bracelet|brooch|locket|quilt|blanket|piano|violin|guitar|car|truck|"
    r"boat|bicycle|bike|letters?|photos?|photographs?|album|recipes?|cookbook|diary|journal|"
    r"medals?|painting|portrait|bible|clock|heirloom|gift|dress|coat|hat|chair|table|desk|"
    r"trunk|chest|box|tools?|camera|typewriter|sewing machine|radio|book"
)

#: verbs of a first-hand account: what someone remembered, said, wrote or thought
_ACCOUNT_VERBS = (
    r"remember\w*|recall\w*|say|says|said|write|writes|wrote|written|think|thinks|thought|tell|tells|told|"
    r"describe\w*"
)

#: intent -> cues (weight, pattern). Each cue counts once; evidence combines by noisy-OR.
CUES: dict[Intent, tuple[Cue, ...]] = {
    Intent.RELATIONAL: _cues(
        (0.6, r"\brelationships?\b|\brelated to\b"),
        (0.6, r"\bwho (?:was|is|were|are) [\w'’ -]{1,40}? to\b"),
        (0.55, r"\b(?:get|gets|got|getting) along\b|\bknow each other\b|\bknew each other\b"),
        (0.5, r"\b(?:married|marry|marriage|husband|wife|spouse|engaged|divorced?|courted|dated)\b"),
        (0.45, rf"(?:\b(?:her|his|my|their|your|our|whose|a|the|\w+['’]s?)\s+(?:\w+\s+)?)(?:{_KIN})\b"),
        (
            0.5,
            r"\b(?:friends?|friendship|best friend|pals?|buddies|colleagues?|co-?workers?|"
            r"workmates?|boss|mentor|neighbou?rs?|partners?|sweethearts?|roommates?)\b",
        ),
        (0.5, r"\b(?:met|meet|meeting)\b"),
        # a person described rather than named: "the doctor who", "the neighbour whose boy"
        (0.5, r"\bthe (?:\w+ ){1,2}(?:who|whom|whose)\b"),
        (0.5, r"\b(?:best man|maid of hono(?:u)?r|bridesmaids?|godmother|godfather|pallbearers?)\b"),
        (
            0.4,
            r"\b(?:close to|feel about|felt about|think of|thought of|fell out|argued?|fight|fought|"
            r"reconciled?|cared for|looked up to|get on with|got on with|between (?:them|him and|her and))\b",
        ),
    ),
    Intent.TEMPORAL: _cues(
        (0.35, r"\bwhen\b"),
        (0.5, r"\bwhat (?:year|decade|age|month|season|time of (?:year|life))\b|\bhow old\b|\bhow long\b"),
        (0.5, r"\bthat (?:summer|winter|spring|autumn|fall|year|decade|season|time|era)\b"),
        (
            0.5,
            r"\bhow many (?:years|months|decades|weeks)\b|\b(?:in between|in the meantime|after that|"
            r"before that|came first|in (?:what|which) order|in order|sequence)\b",
        ),
        (0.45, r"\b(?:after|before|during|since|until|throughout) the (?:\w+ )?(?:war|depression)\b"),
        (
            0.5,
            r"\b(?:in|during) (?:her|his|their|my|your|our) (?:early |late |mid-?)?(?:teens|twenties|"
            r"thirties|forties|fifties|sixties|seventies|eighties|nineties|[1-9]0s)\b",
        ),
        (
            0.4,
            r"\b(?:back then|in those days|at the time|early years|later years|later in life|early life|"
            r"childhood|as a (?:child|kid|girl|boy|teenager|young (?:man|woman))|growing up|youth|"
            r"teenage years|old age|timeline|chronolog\w*|era|decades?|centur(?:y|ies))\b",
        ),
    ),
    Intent.SPATIAL: _cues(
        (0.45, r"\bwhere\b"),
        (
            0.35,
            r"\b(?:lived?|living|lives|grew up in|moved (?:to|from|into|away|back)|move to|settled|"
            r"visited|visit|stayed at|born in|emigrated|immigrated|buried|(?:go|goes|went|gone|going|"
            r"travel(?:l?ed)?|drove|drive|came|come|return(?:ed)?) (?:back )?(?:to|into)\b)",
        ),
        (
            0.35,
            r"\b(?:house|home|homestead|farm|ranch|town|city|village|street|road|neighbou?rhood|"
            r"apartment|flat|cottage|cabin|country|countryside|place|places|land|region|island|lake|"
            r"beach|coast|mountains?|valley|county|state|province|abroad|overseas)\b",
        ),
    ),
    Intent.ENTITY_FOCUSED: _cues(
        (0.35, r"\babout (?:the|that|those|this) \w+"),
        # what a thing is made of, and who has it now
        (0.5, r"\b(?:made|built|carved|sewn|sewed) (?:from|of|out of)\b"),
        (
            0.5,
            r"\b(?:who (?:has|had|got|gets|kept|keeps|inherited|owns|owned)|end(?:ed|s)? up|passed down|"
            r"handed down|inherit\w*|belong(?:ed|s)? to)\b",
        ),
        (0.4, r"\bwhat happened (?:at|during|on|to|with|in|after) (?:the|that)\b"),
        (0.3, rf"\b(?:{_EVENT_NOUNS})\b"),
        (0.3, rf"\b(?:{_OBJECT_NOUNS})\b"),
    ),
    Intent.CROSS_LEGACY: _cues(
        (
            0.7,
            r"\b(?:others?|other people|anyone else|everyone else|other relatives|the rest of the family)"
            r" (?:\w+ )?(?:remembers?|recalls?|says?|said|thinks?|thought|wrote|writes?|tells?|told|"
            r"shares?|shared|knows?|knew)\b",
        ),
        (0.7, r"\bother (?:famil(?:y|ies)|legac(?:y|ies)|sides?|branch(?:es)?)\b"),
        (0.6, r"\b(?:his|her|their) own (?:stories|story|words|account|memories|telling|legacy|letters?)\b"),
        (
            0.6,
            rf"\b(?:himself|herself)\b(?=.*\b(?:{_ACCOUNT_VERBS})\b)|\b(?:{_ACCOUNT_VERBS})\b.*\b(?:himself|herself)\b",
        ),
        (0.6, r"\b(?:linked|connected) (?:legac(?:y|ies)|stor(?:y|ies)|famil(?:y|ies)|memorials?)\b"),
        (0.5, r"\blinked\b"),
        (0.6, r"['’]s? legac(?:y|ies)\b"),
        (0.4, r"\b(?:his|her|their) legacy\b"),
        (0.6, r"\bfrom (?:\w+['’]s?|his|her|their) (?:side|perspective|point of view|end)\b"),
        (
            0.4,
            r"\b(?:perspective|point of view|side of the family|in (?:his|her|their) (?:own )?words|"
            r"how did \w+ remember)\b",
        ),
    ),
}
#: the question word that opens a question names the kind of answer wanted
QUESTION_HEADS: dict[Intent, Cue] = {
    Intent.TEMPORAL: (
        0.7,
        re.compile(
            r"(?:^|[.?!]\s+)(?:and |so |but )?(?:when|what year|in what year|"
            r"how long|how old|since when)\s+\w",
            re.IGNORECASE,
        ),
    ),
    Intent.SPATIAL: (
        0.7,
        re.compile(
            r"(?:^|[.?!]\s+)(?:and |so |but )?(?:where|in what (?:town|city|place))\s+\w", re.IGNORECASE
        ),
    ),
    Intent.RELATIONAL: (
        0.55,
        re.compile(r"(?:^|[.?!]\s+)(?:and |so |but )?(?:who|whom)\s+\w", re.IGNORECASE),
    ),
}
#: a named entity that only a linked legacy holds points the question across the link
LINKED_MATCH_WEIGHT = 0.7
#: what a linked legacy's subject remembered, wrote or said is told in their own legacy
LINKED_VOICE_WEIGHT = 0.75
_VOICE = re.compile(
    rf"\b(?:{_ACCOUNT_VERBS}|feel|feels|felt|mention\w*|account|side|perspective|legacy|stories)\b",
    re.IGNORECASE,
)

#: the order that settles a tie (more specific intents first)
PRIORITY: tuple[Intent, ...] = (
    Intent.CROSS_LEGACY,
    Intent.RELATIONAL,
    Intent.ENTITY_FOCUSED,
    Intent.SPATIAL,
    Intent.TEMPORAL,
)
#: evidence from matched entities and time expressions
PERSON_MATCH_WEIGHT = 0.5  # relational: someone other than the subject is named
PLACE_MATCH_WEIGHT = 0.55  # spatial: a known place is named
THING_MATCH_WEIGHT = 0.65  # entity_focused: a known event or object is named (outweighs "who")
SETTING_PLACE_WEIGHT = 0.3  # spatial: a place named only as the setting of a named thing
TIME_WEIGHT = 0.6  # temporal: a year, a range or a decade
RESOLVED_PLACE_WEIGHT = 0.35  # spatial: "there" resolved to a place of the conversation

_PERSON_PRONOUN = re.compile(r"\b(?:she|he|her|him|his|hers|herself|himself)\b", re.IGNORECASE)
#: the gender a third-person pronoun names ("m", "f", as kinship's genders)
PRONOUN_GENDER: dict[str, str] = {
    **dict.fromkeys(("she", "her", "hers", "herself"), "f"),
    **dict.fromkeys(("he", "him", "his", "himself"), "m"),
}
_TIME_ANAPHOR = re.compile(
    r"\b(?:that (?:summer|winter|spring|autumn|fall|year|decade|season|time|era)|back then|"
    r"at the time|in those days)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+(?:'\w+)?")
_BE_OR_MODAL = _words(
    """is was were are be been being will would might must may could should can seems seemed
    used isn't wasn't weren't aren't won't wouldn't"""
)
_QUANTIFIERS = _words(
    """a an any some anything anyone anybody someone somebody something much many no ever more
    other another enough lots plenty"""
)
