from __future__ import annotations

import pytest

from memrouter.index.stem import stem
from memrouter.index.text import query_terms, tokens

# Pairs from the published description of the algorithm.
CASES = """caresses caress ponies poni ties ti caress caress cats cat feed feed agreed agre plastered plaster
bled bled motoring motor sing sing conflated conflat troubled troubl sized size hopping hop tanned tan
falling fall hissing hiss fizzed fizz failing fail filing file happy happi sky sky relational relat
conditional condit rational ration valenci valenc digitizer digit conformabli conform radicalli radic
differentli differ vileli vile analogousli analog vietnamization vietnam predication predic operator oper
feudalism feudal decisiveness decis hopefulness hope callousness callous formaliti formal
sensitiviti sensit sensibiliti sensibl triplicate triplic formative form formalize formal
electriciti electr electrical electr hopeful hope goodness good revival reviv allowance allow
inference infer airliner airlin gyroscopic gyroscop adjustable adjust defensible defens irritant irrit
replacement replac adjustment adjust dependent depend adoption adopt homologou homolog communism commun
activate activ angulariti angular homologous homolog effective effect bowdlerize bowdler probate probat
rate rate cease ceas controll control roll roll generalizations gener oscillators oscil""".split()


@pytest.mark.parametrize("word,expected", list(zip(CASES[::2], CASES[1::2], strict=False)))
def test_porter_vocabulary(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_tokens_fold_case_diacritics_and_split_cjk() -> None:
    assert tokens("Café NAÏVE configuration") == ["cafe", "naiv", "configur"]
    assert tokens("日本語") == ["日本", "本語"]
    assert tokens("snake_case-and.dots") == ["snake", "case", "and", "dot"]


def test_query_terms_drop_stop_words_unless_nothing_else_remains() -> None:
    assert query_terms("How do we handle the flaky tests?") == ["handl", "flaki", "test"]
    assert query_terms("to be or not") == ["to", "be", "or", "not"]
    assert query_terms("!!! ???") == []
