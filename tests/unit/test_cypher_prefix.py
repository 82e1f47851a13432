"""Label and type prefixing: logical names in, prefixed and whitelisted names out."""

import pytest

from heirloom.adapters.cypher import GraphSchemaError, prefix_query, validate_prefix


def test_labels_and_types_are_prefixed_and_quoted():
    q = "MATCH (p:Person {id: $id})-[r:FAMILY_OF|KNEW]-(c:Person) RETURN c"
    assert prefix_query(q, "prod") == (
        "MATCH (p:`prod-Person` {id: $id})-[r:`prod-FAMILY_OF`|`prod-KNEW`]-(c:`prod-Person`) RETURN c"
    )


def test_map_keys_strings_and_parameters_are_untouched():
    q = "MATCH (s:Story) WHERE s.title = 'a:Person' AND s.x = \"b:KNEW\" SET s += {note: $v} RETURN s"
    out = prefix_query(q, "dev")
    assert "'a:Person'" in out and '"b:KNEW"' in out and "{note: $v}" in out
    assert "(s:`dev-Story`)" in out


def test_where_label_predicates_and_alternation_with_colons():
    out = prefix_query(
        "MATCH (e) WHERE (e:Place OR e:Event) MATCH ()-[r:MENTIONS|:REFERENCES]->() RETURN e", "x"
    )
    assert "e:`x-Place`" in out and "e:`x-Event`" in out
    assert "[r:`x-MENTIONS`|`x-REFERENCES`]" in out


@pytest.mark.parametrize(
    "bad",
    [
        "MATCH (n:Secret) RETURN n",
        "MATCH ()-[r:OWNS_ALL]->() RETURN r",
        "MATCH (n:`Person`) DETACH DELETE n WITH 1 AS x MATCH (m:`Admin`) RETURN m",
    ],
)
def test_names_outside_the_whitelist_are_refused(bad):
    with pytest.raises(GraphSchemaError):
        prefix_query(bad, "prod")


@pytest.mark.parametrize("prefix", ["Prod", "pr-od", "", "a b", "x`y"])
def test_prefix_must_be_lowercase_alnum_underscore(prefix):
    with pytest.raises(GraphSchemaError):
        validate_prefix(prefix)
