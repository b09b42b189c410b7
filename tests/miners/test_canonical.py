"""Name canonicalisation: the same class whatever way annotators wrote it."""

from __future__ import annotations

import pytest

from miners.canonical import Canonicalizer, PredicateCanonicalizer, read_alias_file, synset_lemma
from storage.annotation.names import basic_attribute, basic_name


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Wheels", "wheel"),
        ("  the wheel ", "wheel"),
        ("a cup", "cup"),
        ("An apple", "apple"),
        ("cups", "cup"),
        ("men", "man"),
        ("people", "person"),
        ("leaves", "leaf"),
        ("glasses", "glasses"),
        ("bus", "bus"),
        ("boxes", "box"),
        ("benches", "bench"),
        ("skies", "sky"),
        ("tennis racket", "tennis racket"),
        ("traffic  lights", "traffic light"),
        ("the", "the"),
        ("grass", "grass"),
        ("", ""),
        ("a", "a"),
    ],
)
def test_basic_name(raw: str, expected: str) -> None:
    assert basic_name(raw) == expected


def test_attributes_and_predicates_are_trimmed_and_lowercased_not_singularised() -> None:
    assert basic_attribute(" Glass ") == "glass"
    assert basic_attribute("DARK  blue") == "dark blue"
    assert PredicateCanonicalizer()(" ON top OF ") == "on top of"


def test_aliases_map_to_the_first_name(tmp_path) -> None:
    path = tmp_path / "object_alias.txt"
    path.write_text("t-shirt,tshirt,tee shirts\nsofa,couch\nsingle\n")
    groups = read_alias_file(path)
    assert groups == [["t-shirt", "tshirt", "tee shirts"], ["sofa", "couch"]]
    c = Canonicalizer("name", groups)
    assert c.name("Tee Shirt") == "t-shirt" and c.name("couches") == "sofa" and c.name("sofa") == "sofa"
    pc = PredicateCanonicalizer([["on", "on top of", "sitting on"]])
    assert pc("Sitting On") == "on"


def test_alias_targets_are_never_singularised(tmp_path) -> None:
    """A target is a class name as written: with a plural target, the words aliased to it, the
    target itself and its singular all give the target; none becomes "tennis shoe" (issue 31:
    the alias tests used singular targets only, so singularising targets went unnoticed)."""
    path = tmp_path / "object_alias.txt"
    path.write_text("tennis shoes,sneakers,trainers\nsofa,couch\n")
    c = Canonicalizer("name", read_alias_file(path))
    raws = ("sneakers", "Sneaker", "trainers", "tennis shoes", "the Tennis  Shoes", "tennis shoe")
    assert {raw: c.name(raw) for raw in raws} == dict.fromkeys(raws, "tennis shoes")
    assert c.name("sofas") == "sofa" and c.name("couches") == "sofa"  # singular targets as before
    merges = c.merges()
    assert (
        "tennis shoes -> tennis shoe" not in merges["singularised"]
        and merges["aliases"]["sneakers -> tennis shoes"] == 1
    )
    synset = Canonicalizer("synset", read_alias_file(path))
    assert (
        synset.object_name("sneakers", ["sneaker.n.01"]) == "tennis shoes"
    )  # the lemma finds the alias word's singular
    assert synset.object_name("tennis shoes", []) == "tennis shoes"


def test_synset_mode_groups_by_synset_lemma() -> None:
    assert synset_lemma("traffic_light.n.01") == "traffic light"
    c = Canonicalizer("synset")
    assert c.object_name("Automobile", ["car.n.01"]) == "car"
    assert c.object_name("cars", []) == "car"  # no synset: the name rules
    assert Canonicalizer("name").object_name("Automobile", ["car.n.01"]) == "automobile"
    with pytest.raises(ValueError, match="canonical mode"):
        Canonicalizer("lemma")
