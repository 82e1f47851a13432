"""The local entity extractor: spaCy's small English model plus rules (extractor.py), its
vocabulary (lexicon.py and config/lexicons/), and the rules by what they find (people, things,
clauses) and how candidates are chosen (selection)."""
