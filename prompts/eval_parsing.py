"""Reading evaluation answers: Yes/No, option letters, numbers, and tagged hallucination spans.

Models answer in prose, markdown, with chain-of-thought before the verdict, sometimes in
Chinese. A reply gets the verdict a careful human grader would give it:

- an explicit final-answer marker ("Final answer:", "The answer is") wins; otherwise the start
  of the reply (standard mode) or its last line (CoT mode); otherwise an unambiguous mention
  anywhere;
- a self-correction ("B... actually no, C", "Yes. Wait, no.", "or rather") counts what the
  model settled on: the part after the last correction, when it holds an answer;
- a hedge is not credited: "Yes and no", "maybe", "I can't tell", two options named as the
  answer ("(A) and (B)", "A or B"), two counts ("20 or 21", "19-23" for an exact count); a
  hedge with a clear lean is read as a grader reads it: "It's unclear, but probably yes." is
  Yes, "I'm fairly sure there is a cat." is Yes, "unclear" alone is nothing;
- an option may be named by its text without its article ("Metal chair." for "a metal chair",
  "The dog." for "a dog": the whole reply must be that text), as the only one ("B and only
  B.", "Only B."), or as what is left ("Options A, B and C are wrong, leaving D.");
- idiomatic answers count: "Definitely not.", "Not that I can tell.", "I don't think so." are
  No; "I think so", "Of course" are Yes; "A is correct", a lowercase "c", "twenty-one";
- structured answers are markers: ``{"answer": "B"}``, ``\\boxed{C}``, "Letter: D", "Answer - C";
  a letter may be followed by its reason ("B, because ...", "C - the cat");
- the model may answer in its own language: French, German, Spanish, Chinese, Japanese yes/no,
  answer markers and hedges; "Y" / "N" alone;
- counts: words and "dozen", "12.0" is 12; a bound or range ("at least 12", "twelve or
  thirteen") is never an exact count;
- a reply that contradicts itself ("Yes, there is no cat.") has no verdict.

Ambiguity returns ``None`` (scored as wrong and counted as unparseable), never a guess. The
exported lmms-eval tasks ship a verbatim copy of this file, so keep it standard-library only.

Hallucination spans (MHALO, papers/mhalo.txt): a detector copies the response with XML-style
tags (``<hallucination type="Object">two dogs</hallucination>``). Spans are half-open token
intervals over the whitespace tokens of the *untagged* response; a detector that changes the
response text did not follow the instruction (``followed=False``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LETTERS = string.ascii_uppercase
HEDGE = "?"  # what a reader returns for a reply that hedges: no verdict, and stop looking

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")
_FINAL = re.compile(
    r"(?:\b(?:final\s+answer|answer|conclusion|verdict|therefore|so\s+the\s+answer\s+is|letter(?=\s*[:：])|"
    r"r[ée]ponse(?:\s+finale)?|(?:endg[üu]ltige\s+)?antwort|respuesta(?:\s+final)?)\b|答案|最终答案|答え|正解)"
    r"\s*(?:(?:is|est|ist|lautet|es)\b|是|为|は)?\s*[:：\-–—=]?\s*",
    re.I,
)
_MARKDOWN = re.compile(r"[*_`#>]+")
# A self-correction: what follows the last one is what the model settled on.
_CORRECTION = re.compile(
    r"(?:(?:^|(?<=[.,;:!?…\-—(]))\s*(?:actually|wait|hmm|on\s+second\s+thought|correction|scratch\s+that|no\s+wait|"
    r"let\s+me\s+correct(?:\s+(?:myself|that))?|i\s+take\s+(?:that|it)\s+back|my\s+mistake|i\s+was\s+wrong)\b"
    r"|\bactually(?=\s*,|\s+no\b|\s+(?:it'?s|it\s+is|the\s+answer|i\s+think|there))|\bor\s+rather\b)\s*[,:;!.]*",
    re.I,
)
_LEADING_NO = re.compile(r"^\s*(?:no|nope|sorry)\b[\s,.:;!\-—]*(?=\S)", re.I)

_YES_WORDS = {
    "yes",
    "yeah",
    "yep",
    "yup",
    "yea",
    "true",
    "correct",
    "affirmative",
    "oui",
    "ouais",
    "ja",
    "jawohl",
    "doch",
    "sí",
    "是",
    "有",
    "对",
}
_NO_WORDS = {"no", "nope", "nah", "false", "incorrect", "negative", "non", "nein", "否", "不是", "没有", "不", "无"}
# Replies in Chinese and Japanese run words together: their verdicts are read as prefixes.
_CJK_NO = (
    "不是",
    "没有",
    "不对",
    "不存在",
    "否",
    "错",
    "いいえ",
    "いや",
    "ありません",
    "いません",
    "ないです",
    "ない。",
)
_CJK_YES = ("是", "有", "对", "存在", "正确", "はい", "ええ", "うん", "あります", "います", "そうです")
# Two-sided replies: no verdict, whatever else they say.
_YN_HEDGE = re.compile(
    r"\b(?:yes\s*,?\s+and\s+(?:also\s+)?no|yes\s+or\s+no|no\s+and\s+yes|yes\s*/\s*no|partly|partially|sort\s+of|kind\s+of|"
    # "I don't know" phrases that open with a negation word: "No idea.", "No sé.", "Keine Ahnung."
    r"no\s+idea|not\s+(?:really\s+|quite\s+)?sure|no\s+sé|ni\s+idea|no\s+estoy\s+segur[oa]|keine\s+ahnung|nicht\s+(?:ganz\s+)?sicher|"
    r"aucune\s+id[ée]e|pas\s+s[ûu]r)\b"
    r"|看不清|不清楚|无法判断|难以判断|不知道|わかりません|分かりません|わからない",
    re.I,
)
# Non-committal replies: no verdict unless they open with one.
_YN_UNSURE = re.compile(
    r"\b(?:maybe|perhaps|possibly|not\s+sure|unsure|uncertain|unclear|it\s+depends|hard\s+to\s+(?:say|tell)|"
    r"difficult\s+to\s+(?:say|tell)|impossible\s+to\s+(?:say|tell)|(?:can\s*not|cannot|can'?t|unable\s+to|could\s*n'?t)\s+(?:tell|determine|say|be\s+sure|decide)|"
    r"peut-[êe]tre|je\s+ne\s+sais\s+pas|vielleicht|ich\s+wei(?:ß|ss)\s+(?:es\s+)?nicht|quiz[áa]s?|tal\s+vez|no\s+sé|no\s+estoy\s+segur[oa])\b"
    r"|也许|或许|可能|不确定|无法确定|不好说|说不准|たぶん|多分|わかりません|分かりません|わからない",
    re.I,
)
_NO_LEAD = re.compile(
    r"^(?:(?:definitely|certainly|absolutely|of\s+course|surely|clearly|obviously|probably|likely)\s+not\b|"
    r"not\s+(?:at\s+all|really|quite|that\s+i\s+(?:can|could)\s+(?:tell|see)|as\s+far\s+as\s+i\s+can\s+(?:tell|see)|to\s+my\s+eye|"
    r"visible|present|anymore|any\s+more|that\s+i\s+see)\b|"
    r"i\s+(?:don'?t|do\s+not)\s+(?:think|believe)\s+so\b|i\s+doubt\s+it\b|(?:it|there|they|this|that)\s*(?:'s|\s+is|\s+are|\s+does|\s+do|\s+has|\s+have|\s+was|\s+were)\s*(?:not\b|n'?t\b)|"
    r"(?:it|there|they|this|that)\s+(?:isn'?t|aren'?t|doesn'?t|don'?t|hasn'?t|haven'?t|wasn'?t|weren'?t)\b|none\b|nothing\b|never\b|"
    r"pas\s+du\s+tout\b|absolument\s+pas\b|je\s+ne\s+(?:pense|crois)\s+pas\b|il\s+n'?y\s+a\s+(?:pas|aucun|rien)\b|aucun|rien\b|"
    r"ich\s+(?:glaube|denke)\s+nicht\b|gar\s+nicht\b|keine?[nrs]?\b|es\s+gibt\s+kein|nicht\b|"
    r"no\s+hay\b|ninguno\b|ninguna\b|nada\b|en\s+absoluto\b)",
    re.I,
)
_YES_LEAD = re.compile(
    r"^(?:i\s+(?:think|believe)\s+so\b|no\s+doubt\b|without\s+(?:a\s+)?doubt\b|(?:it|there|they)\s+(?:is|are|does|do|has|have)\s*[.!]?$)",
    re.I,
)
# An affirming word set off on its own ("Of course!", "Sure, ..."): Yes, unless what follows says
# otherwise ("Sure! ... there is no mustard"). "Clearly the bun is bare" is an adverb, not a Yes.
_AFFIRM = re.compile(
    r"^(?:definitely|certainly|absolutely|of\s+course|surely|indeed|sure(?:\s+thing)?)(?:\s+yes)?\s*(?:[,.!;:]+|$)",
    re.I,
)
_NEG_PHRASES = re.compile(
    r"\b(there\s+(?:is|are)\s+no|there\s+(?:isn't|aren't|is\s+not|are\s+not)|no\s+such|not\s+(?:present|visible|there)|"
    r"does\s+not|doesn't|(?:cannot|can't|can\s+not|do\s+not|don't)\s+see|absent|nothing|no\s+longer)\b",
    re.I,
)

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_WORD_NUMBERS = {**_UNITS, **_TENS, "none": 0}


_BOXED = re.compile(r"\$*\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}\$*")
_TEXT_CMD = re.compile(r"\\(?:text|mathrm|textbf)\s*\{([^{}]*)\}")
# A JSON (or Python dict) field that holds the answer: {"answer": "B"}, {'count': 12}
_FIELD = re.compile(
    r"[\"'](?:final_answer|final answer|answer|choice|option|letter|count|number|label|prediction|result)[\"']\s*:\s*"
    r"(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s,}\]]+))",
    re.I,
)


def _field(m: re.Match[str]) -> str:
    value = next((g for g in m.groups() if g is not None), "")
    return f"\nAnswer: {value}\n"


def clean(text: str | None) -> str:
    """Drop reasoning blocks, code fences and markdown emphasis; put a structured answer
    (``\\boxed{C}``, ``{"answer": "B"}``) on its own "Answer:" line; normalise whitespace per line."""
    if not text:
        return ""
    text = _THINK.sub(" ", text)
    if re.search(r"</think>", text, re.I):  # the chat template opened the block: all before its end is reasoning
        text = re.split(r"</think>", text, flags=re.I)[-1]
    elif re.search(r"<think>", text, re.I):  # a reasoning block never closed: no answer was given
        text = re.split(r"<think>", text, flags=re.I)[0]
    text = _TEXT_CMD.sub(r"\1", text)
    text = _BOXED.sub(lambda m: f"\nAnswer: {m.group(1)}\n", text)
    text = _FIELD.sub(_field, text)
    text = _FENCE.sub(" ", text)
    text = _MARKDOWN.sub("", text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def _segment(body: str, cot: bool) -> tuple[str, str]:
    """(the answer segment, where a self-correction of it may be): after the last final-answer
    marker; else the last line (CoT) or the first line (standard), with the last later line
    that opens with a correction ("Yes.\nWait, no.")."""
    matches = list(_FINAL.finditer(body))
    if matches:
        tail = body[matches[-1].end() :].strip()
        if tail:
            seg = tail.split("\n")[0].strip()
            return seg, seg
    lines = body.split("\n")
    if cot:
        return lines[-1].strip(), lines[-1]
    later = [line for line in lines[1:] if _CORRECTION.match(line)]
    return lines[0].strip(), lines[0] + ("\n" + later[-1] if later else "")


def _corrected(scope: str) -> str:
    """What follows the last self-correction in ``scope`` (first line), or "" when there is none."""
    last = None
    for last in _CORRECTION.finditer(scope):
        pass
    if last is None:
        return ""
    tail = scope[last.end() :].strip().split("\n")[0].strip()
    return tail if re.search(r"\w", tail) else ""


def _parts(text: str | None, cot: bool) -> tuple[str, str, str]:
    """(the corrected answer, the answer segment, the whole cleaned reply), most decisive first."""
    body = clean(text)
    if not body:
        return "", "", ""
    seg, scope = _segment(body, cot)
    return _corrected(scope), seg, body


def answer_segment(text: str | None, cot: bool = False) -> str:
    """The part of a reply that holds the answer: after a self-correction, else after the last
    final-answer marker, else the last line (CoT) or the first line (standard)."""
    fixed, seg, _ = _parts(text, cot)
    return _LEADING_NO.sub("", fixed) if fixed else seg


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-zà-öø-ÿß]+|[\u4e00-\u9fff]+|[\u3040-\u30ff]+", text.lower())


# A Yes that goes on to deny what was asked ("Yes, there is no cat."): the reply contradicts
# itself. Only a clause that denies existence outright counts ("Yes, the cup is gone" may
# answer "Was the cup removed?"); "no doubt" is not a denial.
_DENIES = re.compile(
    r"^(?:there\s+(?:is|are|was|were)\s+no\b(?!\s+doubt)|there\s*(?:'s|\s+is)\s+no\b(?!\s+doubt)|"
    r"there\s+(?:isn'?t|aren'?t|wasn'?t|weren'?t|is\s+not|are\s+not)\b|"
    r"(?:i\s+)?(?:don'?t|do\s+not|can'?t|cannot|can\s+not)\s+see\s+(?:any|a|an)\b|nothing\s+(?:is|has|was)\b|"
    r"il\s+n'?y\s+a\s+(?:pas|aucun)|es\s+gibt\s+kein|no\s+hay\b|图中没有|没有|ありません|いません)",
    re.I,
)
_YES_OPENER = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|oui|ja|sí|si|是的|是|有|对|はい)(?=[\W]|$)[\s,.!:;，。、！：-]*", re.I
)


def _contradicts(segment: str) -> bool:
    """The segment opens with Yes and its next clause denies existence."""
    m = _YES_OPENER.match(segment.strip())
    if not m:
        return False
    clause = re.split(
        r"[,.;!?，。；！？]|\bbut\b|\bthough\b|\bmais\b|\baber\b|\bpero\b|但", segment.strip()[m.end() :], maxsplit=1
    )[0]
    return bool(_DENIES.match(clause.strip()))


# A hedge, then a clear lean: "It's unclear, but probably yes.", "Hard to say, though I'd lean no."
_LEAN = re.compile(
    r"[,;.]?\s*\b(?:but|though|although|however|yet)\b\s*,?\s*(?:(?:most\s+|very\s+|more\s+)?(?:probably|likely)|"
    r"i\s+(?:think|believe|lean(?:\s+towards?)?|would\s+(?:say|guess|lean(?:\s+towards?)?))|"
    r"i'd\s+(?:say|guess|lean(?:\s+towards?)?)|on\s+balance|if\s+i\s+had\s+to\s+(?:choose|guess|pick)\s*,?)\s*[:,]?\s*"
    r"(yes|no|not)\b"
)
# Confidence before a claim: "I'm fairly sure there is a cat.", "I am quite certain there's no dog."
_CONFIDENT = re.compile(
    r"^(?:i'm|i\s+am)\s+(?:fairly|pretty|quite|reasonably|very|almost|nearly|rather|absolutely|completely)?\s*"
    r"(?:sure|certain|confident|positive)\s*(?:that\s+)?,?\s*(?=\w)"
)
_ASSERTS = re.compile(
    r"^(?:there\s+(?:is|are|was|were)|there's|i\s+(?:can\s+)?see|it\s+(?:is|was|has)|it's|they\s+(?:are|were|have))\b"
)
_CLAIM_HEDGES = re.compile(r"\b(?:or|maybe|perhaps|possibly|might|unless|but|though)\b")
_STILL_HEDGING = re.compile(r"\b(?:yes|no|or|maybe|perhaps|possibly|might|unless|but|though)\b")


def _leaning(s: str) -> str | None:
    """The lean of a reply that hedges and then commits ("unclear, but probably yes"); None
    when it does not hedge first, leans nowhere, or hedges again after its lean."""
    m = _LEAN.search(s)
    if m is None or not (_YN_HEDGE.search(s[: m.start()]) or _YN_UNSURE.search(s[: m.start()])):
        return None
    if _STILL_HEDGING.search(s[m.end() :]) or _YN_HEDGE.search(s[m.end() :]) or _YN_UNSURE.search(s[m.end() :]):
        return HEDGE
    return "Yes" if m.group(1) == "yes" else "No"


def _confident_claim(s: str) -> str | None:
    """ "I'm fairly sure <claim>": the claim's verdict (Yes for "there is a cat", No for a
    denial); None when nothing follows the confidence or the claim hedges again."""
    m = _CONFIDENT.match(s)
    if m is None:
        return None
    claim = s[m.end() :].strip()
    if _CLAIM_HEDGES.search(claim):
        return HEDGE
    found = _yn_of(claim)
    if found:
        return found
    if _DENIES.match(claim) or re.match(
        r"(?:there|it|they)\s+(?:is|are|was|were)\s+not\b|(?:there|it|they)\s+(?:isn't|aren't|wasn't|weren't)\b", claim
    ):
        return "No"
    return "Yes" if _ASSERTS.match(claim) else None


def _yn_of(segment: str) -> str | None:
    """ "Yes", "No", :data:`HEDGE`, or None when the segment says nothing either way."""
    s = re.sub(r"^[\s\W_]+", "", segment.strip().lower().replace("’", "'"))
    toks = _tokens(s)
    if not toks:
        return None
    if re.fullmatch(r"[yn]\W*", s):  # "Y", "N."
        return "Yes" if s[0] == "y" else "No"
    leaning = _leaning(s)
    if leaning:
        return leaning
    if _YN_HEDGE.search(s):
        return HEDGE
    confident = _confident_claim(s)
    if confident:
        return confident
    if _NO_LEAD.search(s):
        return "No"
    if _YES_LEAD.search(s):
        return "Yes"
    affirm = _AFFIRM.match(s)
    if affirm:
        return _yn_of(s[affirm.end() :]) or "Yes"
    first = toks[0]
    if first in _YES_WORDS or (first == "si" and re.match(r"si(?:\s*[,.!]|$)", s)):
        return "Yes"
    if first in _NO_WORDS:
        return "No"
    if s.startswith(_CJK_NO):
        return "No"
    if s.startswith(_CJK_YES) and not _YN_UNSURE.search(s):
        return "Yes"
    if all(re.match(r"[\u3040-\u30ff\u4e00-\u9fff]", t) for t in toks) and not _YN_UNSURE.search(s):
        # a whole sentence in Chinese or Japanese: "图中没有猫" (No), "桌上有一个杯子" (Yes)
        if re.search(r"没有|不存在|ありません|いません|ないです", s):
            return "No"
        if re.search(r"有|存在|あります|います", s):
            return "Yes"
    if _YN_UNSURE.search(s):
        return HEDGE
    # "I think so" in other words: "Je crois que oui.", "Ich glaube ja.", "Creo que no."
    yes, no = bool({"yes", "oui", "ja", "sí"} & set(toks)), bool({"no", "non", "nein"} & set(toks))
    if yes != no:
        return "Yes" if yes else "No"
    return None


def extract_yes_no(text: str | None, cot: bool = False) -> str | None:
    """``"Yes"``, ``"No"`` or ``None`` when the reply does not commit to one, hedges, or
    contradicts itself ("Yes, there is no cat.")."""
    fixed, seg, body = _parts(text, cot)
    rest = _LEADING_NO.sub("", fixed)
    if rest != fixed and _yn_of(rest):  # "No... actually no, yes": that "no" takes back the first answer
        fixed = rest
    for where in (fixed, seg):
        found = _yn_of(where) if where else None
        if found:
            if found == "Yes" and _contradicts(where):
                return None
            return None if found == HEDGE else found
    words = set(_tokens(body))
    has_yes, has_no = "yes" in words, "no" in words
    if has_yes != has_no:
        return "Yes" if has_yes else "No"
    if not has_yes and not has_no and _NEG_PHRASES.search(seg or body):
        return "No"
    return None


def _letter_patterns(letters: str) -> list[re.Pattern[str]]:
    L = f"[{letters}]"
    Li = f"[{letters}{letters.lower()}]"
    marker = (
        r"(?:answer|option|choice|select|choose|pick|go\s+with|going\s+with|opt\s+for|it'?s|it\s+is|it\s+must\s+be|i'?d\s+say|i\s+would\s+say|\bso|\bthus|\bhence|"
        r"\bletter|r[ée]ponse(?:\s+(?:correcte|finale))?|\bchoix|(?:richtige\s+)?antwort|respuesta(?:\s+(?:correcta|final))?|opci[óo]n|"
        r"答案|选项|选择|选|答え|正解)"
    )
    copula = r"(?:\s*(?:(?:is|est|ist|lautet|es|would\s+be)\b|是|为|は|[:：\-–—=]))?\s*(?:(?:la|le|l'|el|die|option|opción)\s+)?"
    return [
        re.compile(rf"{marker}{copula}[(\[]?({L})(?![a-z0-9_'])", re.I),
        re.compile(
            rf"(?:^|(?<=[\s(\[]))[(\[]?({Li})[)\]]?\s+(?:(?:is|seems|looks|would\s+be)\s+(?:the\s+)?(?:correct|right|best|true|most\s+likely|answer|closest)|(?:best\s+)?(?:matches|fits))\b"
        ),
        re.compile(rf"^\s*[(\[]?({Li})[)\].:：!。]?\s*$"),  # a bare letter, either case
        # "B. text", "(B) text", "b) text", "B, because ...", "C - the cat ..."
        re.compile(
            rf"^\s*[(\[]?({L})[)\].:：。](?:\s|$)|^\s*[(\[]({Li})[)\]](?:\s|$)|^\s*({Li})\s*(?:,|\s[-–—]|[-–—]\s)\s*(?=\S)"
        ),
        re.compile(rf"[(\[]({Li})[)\]]"),  # "(B)" anywhere
    ]


def _choice_hedge(where: str, letters: str) -> bool:
    """Two different options named as the answer: "(A) and (B)", "A or B", "either B or C"."""
    Li = f"[{letters}{letters.lower()}]"
    join = r"\s*(?:,\s*(?:and|or)?|/|&|\band\b|\bor\b|\bor\s+maybe\b)\s*(?:option\s+|choice\s+)?"
    not_denied = r"(?!\s+(?:is|are)\s+(?:not|wrong|incorrect|false))"
    pats = (
        rf"[(\[]({Li})[)\]]{join}[(\[]({Li})[)\]]{not_denied}",
        rf"(?<![\w'])([{letters}])[)\]]?{join}[(\[]?([{letters}])\b(?![\w']){not_denied}",
    )
    for p in pats:
        for m in re.finditer(p, where):
            if m.group(1).upper() != m.group(2).upper():
                return True
    return False


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _only_or_left(where: str, letters: str) -> str | None:
    """ "B and only B.", "Only B.", "B only." name one option; "A, B and C are wrong, leaving D."
    names what is left. :data:`HEDGE` when what is left is an option also called wrong."""
    Li = f"[{letters}{letters.lower()}]"
    opt = r"(?:option\s+|choice\s+)?"
    one = re.match(
        rf"^\s*(?:only\s+{opt}[(\[]?({Li})[)\]]?|{opt}[(\[]?({Li})[)\]]?\s*(?:,\s*)?(?:and\s+only\s+{opt}[(\[]?({Li})[)\]]?|only))\s*[.!]?\s*$",
        where,
        re.I,
    )
    if one:
        found = {g.upper() for g in one.groups() if g}
        return found.pop() if len(found) == 1 else HEDGE
    left = re.search(
        rf"\b(?:wrong|incorrect|false|out|ruled\s+out|eliminated|excluded)\b[^.;]*?\b(?:leaving|leaves)\s+(?:only\s+|just\s+)?"
        rf"{opt}[(\[]?([{letters}])[)\]]?(?![\w'])(?!\s*(?:,|\band\b|\bor\b|&|/)\s*{opt}[(\[]?[{letters}](?![\w']))",
        where,
        re.I,
    )
    if left is None:
        return None
    ruled_out = set(re.findall(rf"(?<![\w'])([{letters}])(?![\w'])", where[: left.start(1)]))
    return HEDGE if left.group(1) in ruled_out else left.group(1)


def _choice_in(where: str, letters: str, options: list[str]) -> str | None:
    """The option letter one stretch of a reply names, :data:`HEDGE`, or None."""
    only = _only_or_left(where, letters)
    if only:
        return only
    pats = _letter_patterns(letters)
    called_right = {m.group(1).upper() for m in pats[1].finditer(where)}  # "B, C and D are wrong; A is correct"
    if len(called_right) == 1:
        return called_right.pop()
    if _choice_hedge(where, letters) or called_right:
        return HEDGE
    # Explicit answer markers: the last one wins (CoT restates); "A" before a lowercase word is the article.
    hits = [m.group(1).upper() for m in pats[0].finditer(where) if not _is_article(where, m)]
    if hits:
        return hits[-1]
    for pat in pats[2:4]:
        m = pat.search(where)
        if m and not _is_article(where, m):
            return next(g for g in m.groups() if g).upper()
    paren = {m.group(1).upper() for m in pats[4].finditer(where)}
    if len(paren) == 1:
        return paren.pop()
    if len(paren) > 1:
        return HEDGE
    return _match_option_text(where, options) or _match_option_bare(where, options)


def extract_choice(text: str | None, options: list[str] | None, cot: bool = False) -> str | None:
    """The chosen option letter, or ``None``.

    Accepts "B", "(B)", "b", "B.", "**B**", "Answer: B", "option B", "B is correct", "B: <option
    text>", or the option's own text when exactly one option is quoted; a self-correction counts
    its final choice. An "A" that is an English article ("A cat sits ...") is not a choice, and
    a reply naming two options as its answer is a hedge (``None``).
    """
    n = len(options or []) or 5
    letters = LETTERS[:n]
    fixed, seg, body = _parts(text, cot)
    for where in (_LEADING_NO.sub("", fixed) if fixed else "", seg, body):
        found = _choice_in(where, letters, options or []) if where else None
        if found:
            return None if found == HEDGE else found
    return None


def _is_article(where: str, m: re.Match[str]) -> bool:
    """ "A" followed by a lowercase word is the article, not option A."""
    g = next((i for i in range(1, (m.re.groups or 0) + 1) if m.group(i)), 1)
    if m.group(g).upper() != "A":
        return False
    rest = where[m.end(g) :]
    return bool(re.match(r"\s+[a-z]", rest)) and not re.match(
        r"\s+(?:is|seems|looks|would)\s+(?:the\s+)?(?:correct|right|best|true|most|answer)\b", rest
    )


def _match_option_text(where: str, options: list[str]) -> str | None:
    """The one option whose text the reply quotes; a longer option quoted over a shorter one it
    contains wins; two separate options quoted is a hedge."""
    target = _norm(where)
    if not target:
        return None
    hits = []
    for i, opt in enumerate(options):
        o = _norm(opt)
        if not o:
            continue
        for m in re.finditer(rf"\b{re.escape(o)}\b", target):
            hits.append((m.start(), m.end(), LETTERS[i]))
    if not hits:
        return None
    kept = {
        h[2] for h in hits if not any(o[0] <= h[0] and h[1] <= o[1] and (o[1] - o[0]) > (h[1] - h[0]) for o in hits)
    }
    if len(kept) != 1:
        return HEDGE
    return kept.pop()


_ARTICLE = re.compile(r"^(?:a|an|the)\s+")


def _match_option_bare(where: str, options: list[str]) -> str | None:
    """The option whose text, articles aside, is the whole reply ("Metal chair." or "The metal
    chair." for "a metal chair"); two such options is a hedge."""
    target = _ARTICLE.sub("", _norm(where))
    if not target:
        return None
    hits = {LETTERS[i] for i, opt in enumerate(options) if _ARTICLE.sub("", _norm(opt)) == target}
    if len(hits) > 1:
        return HEDGE
    return hits.pop() if hits else None


_NUMBER = r"(?<![\d.])(\d{1,6})(?![\d.]*\d)"
_TWO_COUNTS = re.compile(
    r"(?<![\d.])(\d{1,6})\s*(?:-|–|—|~|/|\bto\b|\bor\b|\bor\s+maybe\b|\band\b|\bou\b|\boder\b|\bo\b|或|到|至)\s*(\d{1,6})(?![\d.]*\d)",
    re.I,
)
_CONCLUDES = re.compile(
    r"(?:\bso\b|\bthus\b|\bhence\b|\bthat\s+makes\b|\bmaking\b|\bgives\b|\btotal(?:\s+of)?\b|\bin\s+total\b|\baltogether\b|=)[^\d\n]{0,24}?"
    + _NUMBER,
    re.I,
)
# A bound or an estimate that is not a count: "at least 12", "more than a dozen", "12+", "12 or more".
_BOUND_BEFORE = re.compile(
    r"(?:\b(?:at\s+least|at\s+most|more\s+than|less\s+than|fewer\s+than|greater\s+than|over|under|above|below|upwards\s+of|up\s+to|"
    r"nearly|almost|(?:no|not)\s+(?:more|less|fewer)\s+than|just\s+(?:under|over)|well\s+over|"
    r"plus\s+de|moins\s+de|au\s+moins|au\s+plus|presque|mindestens|h[öo]chstens|mehr\s+als|weniger\s+als|[üu]ber|unter|fast|"
    r"m[áa]s\s+de|menos\s+de|al\s+menos|por\s+lo\s+menos|casi)|至少|最少|超过|多于|大于|不到|少于|小于|不少于|不超过|将近)\s*$",
    re.I,
)
_BOUND_AFTER = re.compile(
    r"^\s*(?:\+|(?:or|and)\s+(?:more|fewer|less|over|under|up|above)\b|plus\b|at\s+(?:least|most)\b|ou\s+plus\b|oder\s+mehr\b|"
    r"und\s+mehr\b|o\s+m[áa]s\b|[个只個匹人台本枚つ]?(?:以上|以下|多|余|未満))",
    re.I,
)
_DECIMAL_INT = re.compile(r"(?<![\d.])(\d{1,6})\.0+(?![\d.]*\d)")  # "12.0" is 12


def _committed(flat: str, m: re.Match[str], group: int = 1) -> int | str:
    """The number ``m`` found, or :data:`HEDGE` when a bound qualifies it."""
    if _BOUND_BEFORE.search(flat[: m.start(group)]) or _BOUND_AFTER.match(flat[m.end(group) :]):
        return HEDGE
    return int(m.group(group))


def _digits_in(flat: str) -> int | str | None:
    concluded = list(_CONCLUDES.finditer(flat))
    if concluded:
        return _committed(flat, concluded[-1])
    two = _TWO_COUNTS.search(flat)
    if two and two.group(1) != two.group(2):
        return HEDGE
    m = re.search(_NUMBER, flat)
    return _committed(flat, m) if m else None


_FOREIGN_UNITS = {
    **dict(zip("deux trois quatre cinq sept huit neuf dix onze douze".split(), (2, 3, 4, 5, 7, 8, 9, 10, 11, 12))),
    **dict(zip("zwei drei vier fünf sechs sieben acht neun zehn zwölf".split(), (2, 3, 4, 5, 6, 7, 8, 9, 10, 12))),
    **dict(zip("dos tres cuatro cinco seis siete ocho nueve diez doce".split(), (2, 3, 4, 5, 6, 7, 8, 9, 10, 12))),
}
_SMALL = {**_UNITS, **_FOREIGN_UNITS}
_W_SMALL = "|".join(sorted(_SMALL, key=len, reverse=True))
_W_TENS = "|".join(_TENS)
_BELOW_100 = rf"(?:(?:{_W_TENS})(?:[\s-]+(?:one|two|three|four|five|six|seven|eight|nine))?|{_W_SMALL})"
_WORDS_NUMBER = re.compile(
    rf"\b(?:(?:a|{_BELOW_100})\s+hundred(?:\s+(?:and\s+)?{_BELOW_100})?|{_BELOW_100}|none)\b", re.I
)
_NOT_ONE = re.compile(
    r"\b(?:not\s+(?:a\s+single\s+|even\s+)?one|no\s+one|not\s+a\s+single)\b|一\s*[个只個]?\s*(?:也|都)(?:没有|没|不)",
    re.I,
)
_VAGUE_DOZEN = re.compile(r"\b(?:few|several|many|some|couple\s+of)\s+dozens?\b|\bdozens\b", re.I)
_DOZEN = re.compile(rf"\b(?:(half)\s+a\s+|(\d{{1,3}}|{_W_SMALL})\s+|an?\s+)?dozen\b", re.I)
_CJK_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CJK_NUMBER = re.compile(
    r"([零一二两三四五六七八九十百]+)(?=[个隻只個匹人辆輛张張本把条條颗顆块塊位头頭棵支件台架盏朵片根枚つ]|\s*$|[。.，,！!])"
)


def _word_value(phrase: str) -> int:
    """The value of a number phrase ``_WORDS_NUMBER`` matched ("one hundred and five")."""
    total, cur = 0, 0
    for t in re.findall(r"[a-zà-öø-ÿß]+", phrase.lower()):
        if t == "hundred":
            cur, total = 0, total + (cur or 1) * 100
        elif t in _SMALL:
            cur += _SMALL[t]
        elif t in _TENS:
            cur += _TENS[t]
    return total + cur


def _cjk_value(run: str) -> int:
    """一 .. 九百九十九 ("十二" 12, "二十一" 21, "一百零五" 105)."""
    total, cur = 0, 0
    for ch in run:
        if ch == "百":
            total, cur = total + (cur or 1) * 100, 0
        elif ch == "十":
            total, cur = total + (cur or 1) * 10, 0
        else:
            cur = _CJK_DIGITS[ch]
    return total + cur


def _spell_out(text: str) -> str:
    """Numbers written in words as digits: "twenty-one" -> 21, "a dozen" -> 12, "十二个" -> 12个."""
    text = _VAGUE_DOZEN.sub(" many ", text)
    text = _NOT_ONE.sub(" 0 ", text)  # "not a single one", "一个也没有": none at all

    def dozen(m: re.Match[str]) -> str:
        if m.group(1):
            return "6"
        k = m.group(2)
        return str(12 * (int(k) if k and k.isdigit() else _SMALL.get((k or "one").lower(), 1)))

    text = _DOZEN.sub(dozen, text)
    text = _WORDS_NUMBER.sub(lambda m: "0" if m.group(0).lower() == "none" else str(_word_value(m.group(0))), text)
    return _CJK_NUMBER.sub(lambda m: str(_cjk_value(m.group(1))), text)


_NO_ITEMS = re.compile(r"^(?:there\s+(?:are|is)\s+|i\s+(?:see|count|can\s+see)\s+)?no\s+(?!doubt\b)[a-z]", re.I)


def _number_in(where: str) -> int | str | None:
    """The count one stretch of a reply commits to, :data:`HEDGE` for two counts or a bound, or None."""
    flat = _DECIMAL_INT.sub(r"\1", re.sub(r"(?<=\d),(?=\d{3}\b)", "", where))
    found = _digits_in(flat)
    if found is None:
        found = _digits_in(_spell_out(flat))
    if found is None and _NO_ITEMS.match(flat):
        return 0
    return found


def extract_number(text: str | None, cot: bool = False) -> int | None:
    """The count a reply commits to: digits or words ("twenty-one", "a dozen", "十二"); a
    conclusion ("so 21 in total") over the working before it; ``None`` for two counts ("20 or
    21", "19-23") and for a bound ("at least 12", "more than a dozen", "12+")."""
    fixed, seg, body = _parts(text, cot)
    for where in (fixed, seg, body):
        found = _number_in(where) if where else None
        if found is not None:
            return None if found == HEDGE else int(found)
    return None


_RANGE = re.compile(r"(\d{1,6})\s*(?:-|–|—|~|to|and|至|到)\s*(\d{1,6})")


def extract_range(text: str | None, cot: bool = False) -> tuple[int, int] | None:
    """A numeric range "12-17", "12 to 17", "between 12 and 17" as (low, high), or ``None``."""
    for where in (answer_segment(text, cot), clean(text)):
        m = _RANGE.search(where.replace(",", ""))
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            return (min(lo, hi), max(lo, hi))
    return None


def mentions(text: str, term: str) -> bool:
    """Whole-word, case-insensitive mention of ``term`` (or its simple plural) in ``text``."""
    t = _norm(term)
    if not t:
        return False
    pat = rf"\b{re.escape(t)}(?:s|es)?\b"
    return re.search(pat, _norm(text)) is not None


def negated_mention(text: str, term: str) -> bool:
    """``term`` is only mentioned to deny it ("there is no mustard", "the cup is gone").

    Each clause (split at punctuation and "but") that mentions the term must carry a
    negation before the term or a removal word after it.
    """
    if not mentions(text, term):
        return False
    t = _norm(term)
    for clause in re.split(r"[.,;:!?\n]|\bbut\b|\bhowever\b", text.lower()):
        c = _norm(clause)
        m = re.search(rf"\b{re.escape(t)}(?:s|es)?\b", c)
        if not m:
            continue
        before, after = c[: m.start()], c[m.end() :]
        if re.search(r"\b(no|not|without|neither|nor|never|isn t|aren t|there s no)\b", before):
            continue
        if re.search(r"\b(absent|missing|removed|gone|erased|no longer|not present|not visible)\b", after):
            continue
        return False
    return True


# -- hallucination spans ------------------------------------------------------------

HALLUCINATION_TYPES: tuple[str, ...] = (
    "Object",
    "OCR",
    "Numerical Attribute",
    "Color Attribute",
    "Shape Attribute",
    "Spatial Attribute",
    "Numerical Relation",
    "Spatial Relation",
    "Logical Error",
    "Calculation Error",
    "Knowledge Error",
    "Query Misunderstanding",
)
_TYPE_KEYS = {re.sub(r"[^a-z]", "", t.lower()): t for t in HALLUCINATION_TYPES}

_TAG = re.compile(r"<hallucination(?:\s+type\s*=\s*[\"']([^\"']*)[\"'])?\s*>(.*?)</hallucination>", re.S | re.I)
_BLOCK = re.compile(r"<tagged_text>(.*?)</tagged_text>", re.S | re.I)


@dataclass(frozen=True)
class Span:
    """Half-open token interval [start, end) with an optional hallucination type."""

    start: int
    end: int
    type: str | None = None

    def __len__(self) -> int:
        return max(0, self.end - self.start)


def canonical_type(name: str | None) -> str | None:
    """Map a type as a model writes it ("logical errors", "**Color Attribute**") to one of the 12."""
    if not name:
        return None
    key = re.sub(r"[^a-z]", "", name.lower())
    if key in _TYPE_KEYS:
        return _TYPE_KEYS[key]
    if key.endswith("s") and key[:-1] in _TYPE_KEYS:
        return _TYPE_KEYS[key[:-1]]
    return None


def tokenize(text: str) -> list[tuple[int, int]]:
    """Character offsets of the whitespace tokens of ``text``."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def char_to_token_span(tokens: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """The tokens overlapping characters [start, end) as a half-open token interval."""
    idx = [i for i, (s, e) in enumerate(tokens) if s < end and e > start]
    return (idx[0], idx[-1] + 1) if idx else None


@dataclass(frozen=True)
class Detection:
    spans: tuple[Span, ...]
    followed: bool  # the untagged text equals the response (whitespace-insensitive)


def parse_tagged(tagged: str, response: str) -> Detection:
    """Spans of a detector's tagged copy of ``response``.

    The ``<Tagged_Text>`` block is used when present. Tags are removed to rebuild the plain
    text; if that differs from the response (beyond whitespace), ``followed`` is False.
    """
    block = _BLOCK.search(tagged or "")
    body = block.group(1) if block else re.sub(r"^\s*tagged[_ ]text\s*:\s*", "", tagged or "", flags=re.I)
    plain_parts: list[str] = []
    char_spans: list[tuple[int, int, str | None]] = []
    pos = 0
    cursor = 0
    for m in _TAG.finditer(body):
        before = body[cursor : m.start()]
        plain_parts.append(before)
        pos += len(before)
        inner = m.group(2)
        char_spans.append((pos, pos + len(inner), canonical_type(m.group(1))))
        plain_parts.append(inner)
        pos += len(inner)
        cursor = m.end()
    plain_parts.append(body[cursor:])
    plain = "".join(plain_parts)
    followed = plain.split() == (response or "").split()
    if not followed:
        return Detection((), False)
    tokens = tokenize(plain)
    spans = []
    for s, e, t in char_spans:
        tok = char_to_token_span(tokens, s, e)
        if tok:
            spans.append(Span(tok[0], tok[1], t))
    return Detection(tuple(sorted(set(spans), key=lambda x: (x.start, x.end, x.type or ""))), True)


def spans_from_phrases(response: str, phrases: Iterable[tuple[str, str | None]]) -> tuple[Span, ...]:
    """Token spans of every whole-word occurrence of each (phrase, type) in ``response``."""
    tokens = tokenize(response)
    out = set()
    for phrase, typ in phrases:
        if not phrase.strip():
            continue
        for m in re.finditer(rf"(?<!\w){re.escape(phrase)}(?:s|es)?(?!\w)", response, re.I):
            tok = char_to_token_span(tokens, m.start(), m.end())
            if tok:
                out.add(Span(tok[0], tok[1], typ))
    return tuple(sorted(out, key=lambda x: (x.start, x.end, x.type or "")))


def render_tagged(response: str, spans: Sequence[Span]) -> str:
    """The response with ``<hallucination type=...>`` tags around the given (non-overlapping) spans."""
    tokens = tokenize(response)
    out, cursor = [], 0
    for sp in sorted(spans, key=lambda s: s.start):
        if sp.start < 0 or sp.end > len(tokens) or len(sp) == 0:
            continue
        s, e = tokens[sp.start][0], tokens[sp.end - 1][1]
        if s < cursor:
            continue  # overlapping span: keep the first
        attr = f' type="{sp.type}"' if sp.type else ""
        out.append(response[cursor:s])
        out.append(f"<hallucination{attr}>{response[s:e]}</hallucination>")
        cursor = e
    out.append(response[cursor:])
    return "".join(out)
