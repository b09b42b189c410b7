"""Name canonicalisation: one canonical form per class, used by every stage downstream.

The word-level forms (clean, drop the article, singularise) are :mod:`storage.annotation.names`, shared with
the editors and the audit; the alias and synset rules here are the miners' own.

Visual Genome names are free text ("Wheels", " the wheel", "a cup"); counting them raw
splits one class into many. The rules (details in :class:`Canonicalizer` and
docs/mining.md): lowercase, trim, collapse spaces, drop a leading article; the alias table
(VG 1.4's ``object_alias.txt``: one line of synonyms, the first is kept) applied to that
cleaned raw name; otherwise singularise the head (last) word, keeping plural-only nouns
(``glasses``, ``pants``, ``jeans``, ...). With ``canonical: synset`` an object with a
WordNet synset is grouped by it and named by the synset's lemma ("wheel.n.01" -> "wheel",
aliases applied, never singularised); objects without one fall back to the name rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypedDict

from storage.annotation.names import basic_predicate, cleaned_name, singular_phrase


def synset_lemma(synset: str) -> str:
    """``'wheel.n.01'`` -> ``'wheel'``; ``'traffic_light.n.01'`` -> ``'traffic light'``."""
    head = synset.strip().lower().split(".")[0]
    return head.replace("_", " ")


def read_alias_file(path: str | Path) -> list[list[str]]:
    """VG alias file: each line a comma-separated list of synonyms; the first is canonical."""
    groups = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        words = [w for w in (p.strip() for p in line.split(",")) if w]
        if len(words) > 1:
            groups.append(words)
    return groups


def number_variants(a: str, b: str) -> bool:
    """True when two cleaned names differ only in grammatical number, by the singulariser's
    rules or by a bare ``s`` / ``es`` suffix (``vas,vases``, ``glass,glasses``, ``va,vas``)."""
    if a == b:
        return True
    for x, y in ((a, b), (b, a)):
        if y in (x + "s", x + "es") or singular_phrase(y) == x:
            return True
    return False


class NameMerges(TypedDict):
    """What :meth:`Canonicalizer.merges` reports (the mine summary's ``canonicalisation``)."""

    raw_names: int
    synsets: int
    aliases: dict[str, int]
    singularised: dict[str, int]
    aliases_left_to_singulariser: list[str]


class Canonicalizer:
    """Maps raw names (and synsets) to canonical class names, memoising every raw string seen.

    Order, per distinct raw string: clean (lowercase, trim, single spaces, drop a leading
    article); if the cleaned name is an alias word, its alias target (aliases are applied to
    raw names, never to singularised ones); otherwise singularise the head word (plural-only
    nouns such as ``glasses``, ``pants`` stay) and, if that singular is an alias word (or the
    singular of one), its target. Alias targets are used as written (cleaned, never
    singularised), and a raw name equal to a target (or to its singular) is that target; chains (``a,b`` + ``b,c``) resolve to the final target. Alias pairs that
    only differ in number (``vas,vases``, ``glass,glasses``) are not used: number is the
    singulariser's job, and those lines would merge ``vase`` into ``va`` and spectacles
    with drinking glasses. :meth:`merges` reports how many raw names each rule merged.

    The memo matters at VG scale: ~3.8M object names but only ~100k distinct raw strings.
    """

    def __init__(self, mode: str = "name", aliases: Iterable[Sequence[str]] = ()):
        if mode not in ("name", "synset"):
            raise ValueError(f"canonical mode must be 'name' or 'synset', got {mode!r}")
        self.mode = mode
        direct: dict[str, str] = {}
        self.ignored_aliases: list[str] = []  # "word -> target" pairs left to the singulariser
        for group in aliases:
            target = cleaned_name(group[0])
            if not target:
                continue
            for word in group[1:]:
                w = cleaned_name(word)
                if not w or w == target or w in direct:
                    continue  # the first line naming a word wins, as in VG's own loaders
                if number_variants(w, target):
                    self.ignored_aliases.append(f"{w} -> {target}")
                    continue
                direct[w] = target
        self.alias: dict[str, str] = {w: self._resolve(direct, w) for w in direct}
        # A target is a class name as written: the target itself ("tennis shoes" as a raw name)
        # is that class too, not singularised into a second class beside it.
        self.targets: frozenset[str] = frozenset(t for t in self.alias.values() if t not in self.alias)
        # singular forms of alias words and targets, so "tee shirt" finds "tee shirts" and
        # "tennis shoe" finds "tennis shoes"; never overriding a word or a target
        self._alias_singular: dict[str, str] = {}
        for w, t in [*self.alias.items(), *((t, t) for t in sorted(self.targets))]:
            s = singular_phrase(w)
            if s != w and s not in self.alias and s not in self.targets:
                self._alias_singular.setdefault(s, t)
        self._memo: dict[str, str] = {}
        self._lemmas: dict[str, str] = {}  # synset -> class (synset mode)
        self._rule: dict[
            str, tuple[str, str]
        ] = {}  # raw (or "synset:<s>") -> (rule kind, "from -> to") when a rule changed it

    @staticmethod
    def _resolve(direct: dict[str, str], word: str) -> str:
        seen = {word}
        t = direct[word]
        while t in direct and t not in seen:
            seen.add(t)
            t = direct[t]
        return t

    def _alias_of(self, text: str) -> str | None:
        got = self.alias.get(text)
        return got if got is not None else self._alias_singular.get(text)

    def name(self, raw: str) -> str:
        """Canonical form of a raw name ("" when nothing is left)."""
        got = self._memo.get(raw)
        if got is None:
            got = self._memo[raw] = self._canonical(raw, singularise=True)
        return got

    def _canonical(self, raw: str, singularise: bool, key: str | None = None) -> str:
        key = raw if key is None else key
        c = cleaned_name(raw)
        if not c:
            return ""
        t = self.alias.get(c)
        if t is not None:
            self._rule[key] = ("alias", f"{c} -> {t}")
            return t
        if c in self.targets:
            return c
        s = singular_phrase(c) if singularise else c
        t = self._alias_of(s)
        if t is not None:
            self._rule[key] = ("alias", f"{c} -> {t}")
            return t
        if s != c:
            self._rule[key] = ("singular", f"{c} -> {s}")
        return s

    def lemma_name(self, synset: str) -> str:
        """Class of a WordNet synset: its lemma (a dictionary form: never singularised), then aliases."""
        got = self._lemmas.get(synset)
        if got is None:
            got = self._lemmas[synset] = self._canonical(
                synset_lemma(synset), singularise=False, key=f"synset:{synset}"
            )
        return got

    def object_name(self, raw: str, synsets: Sequence[str] | None) -> str:
        """The class of an annotated object: by synset in ``synset`` mode when one is given."""
        if self.mode == "synset" and synsets:
            return self.lemma_name(synsets[0])
        return self.name(raw)

    def merges(self) -> NameMerges:
        """What each rule did to the raw names seen so far: per alias and per singularisation,
        how many distinct raw strings (and, in synset mode, synsets) it mapped: ``"vases -> vase": 3``
        for "Vases", "vases" and "the vases"."""
        out: dict[str, dict[str, int]] = {"alias": {}, "singular": {}}
        for kind, what in self._rule.values():
            out[kind][what] = out[kind].get(what, 0) + 1
        by_count = lambda d: dict(sorted(d.items(), key=lambda kv: (-kv[1], kv[0])))  # noqa: E731
        return {
            "raw_names": len(self._memo),
            "synsets": len(self._lemmas),
            "aliases": by_count(out["alias"]),
            "singularised": by_count(out["singular"]),
            "aliases_left_to_singulariser": sorted(self.ignored_aliases),
        }


class PredicateCanonicalizer:
    """Predicates: lowercase/trim/collapse, then VG's ``relationship_alias.txt`` when given."""

    def __init__(self, aliases: Iterable[Sequence[str]] = ()):
        self.alias: dict[str, str] = {}
        for group in aliases:
            target = basic_predicate(group[0])
            for word in group[1:]:
                self.alias[basic_predicate(word)] = target
        self._memo: dict[str, str] = {}

    def __call__(self, raw: str) -> str:
        got = self._memo.get(raw)
        if got is None:
            b = basic_predicate(raw)
            got = self.alias.get(b, b)
            self._memo[raw] = got
        return got
