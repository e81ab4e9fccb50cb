"""The learned address finder of redaction: the shipped model file (pickle-free, current with its data, in the plugin
package), its token and span arithmetic, and what it adds to the rules. The examples are written for these tests, not
taken from a training or an evaluation set."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from hindsight_insights.address_model import MODEL_PATH, load_address_model
from hindsight_insights.detection.address_spans import AddressSpans, tokens
from hindsight_insights.detection.redaction import personal_addresses, redact
from scripts.package_plugin import ROOT, plugin_files
from scripts.train_address_spans import data_digest


def test_the_model_file_holds_plain_arrays_only_and_is_small() -> None:
    with zipfile.ZipFile(MODEL_PATH) as archive:
        assert set(archive.namelist()) == {"columns.npy", "meta.npy", "values.npy"}
    with np.load(MODEL_PATH, allow_pickle=False) as arrays:  # raises on any object array
        assert all(arrays[name].dtype != object for name in arrays.files)
    assert MODEL_PATH.stat().st_size < 1024 * 1024


def test_the_model_is_current_with_its_data() -> None:
    """Retrain (make train-address-spans) when a screening set is retired or a corpus changes."""
    assert load_address_model().settings["data_sha256"] == data_digest()


def test_the_plugin_package_ships_the_model() -> None:
    assert MODEL_PATH in plugin_files(ROOT)


def test_arrays_round_trip_to_the_same_spans() -> None:
    model = load_address_model()
    again = AddressSpans.from_arrays(model.to_arrays())
    text = "Bitte schickt das Paket an Jonas Weber, Lindenstraße 12, 3. OG, 04109 Leipzig."
    assert np.allclose(model.token_probabilities(tokens(text)), again.token_probabilities(tokens(text)))
    assert model.find(text) == again.find(text)


def test_a_text_is_cut_into_words_numbers_and_single_chinese_characters() -> None:
    assert [t.text for t in tokens("寄到 Rua Azul, 418-B")] == ["寄", "到", "Rua", "Azul", ",", "418", "-", "B"]


def test_marked_tokens_make_one_span_across_a_comma_with_a_number_and_two_words() -> None:
    text = "Rua das Flores, 418, fim"
    items = tokens(text)
    assert [t.text for t in items] == ["Rua", "das", "Flores", ",", "418", ",", "fim"]
    marked = np.array([True, True, True, False, True, True, False])
    assert AddressSpans.spans(items, marked) == [(0, 19)]  # the trailing comma is not part of it
    assert AddressSpans.spans(items, np.array([True, True, True, False, False, False, False])) == []  # no number
    assert AddressSpans.spans(items, np.array([False, False, True, True, True, False, False])) == []  # too short
    amounts = tokens("2,140 and 2,030")
    assert AddressSpans.spans(amounts, np.ones(len(amounts), dtype=bool)) == []  # one word, the rest numbers


def test_a_business_places_address_is_not_personal_data() -> None:
    text = "Our shop is at 12 Harbour Road, open daily"
    start = text.index("12")
    assert personal_addresses(text, [(start, start + 16)]) == []
    home = "She lives at 12 Harbour Road, ring twice"
    start = home.index("12")
    assert personal_addresses(home, [(start, start + 16)]) == [(start, start + 16)]


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("pakisend po sa Blk 7 Lot 22, Mabini St., Brgy. Malanday, Marikina 1805, salamat", "Lot 22, Mabini St."),
        pytest.param(
            "manda pra Rua das Flores, 210, apto 31, CEP 80010-120, Curitiba, valeu",
            "210, apto 31, CEP 80010",
            # the finder retrained on 2026-12-04 chose threshold 0.65 (at 0.4, 1.5 in 10,000 corpus texts would lose
            # a span, above MAX_ALTERED_CORPUS), where this line reads too weakly
            marks=pytest.mark.xfail(strict=True, reason="known miss since the sixteenth finder: a Brazilian line"),
        ),
        pytest.param(
            "pls deliver to unit 4/17 Wattle Cres, Glenfield NSW 2167, leave at door",
            "17 Wattle Cres",
            # the finder retrained on 2026-12-05 with the twenty-third sets retired chose threshold 0.85 (0.8 before:
            # at 0.8 more than 1 in 10,000 corpus texts would lose a span), where this line reads too weakly
            marks=pytest.mark.xfail(strict=True, reason="known miss since the twenty-fifth finder: an Australian unit"),
        ),
    ],
)
def test_the_learned_finder_removes_addresses_in_shapes_no_rule_was_written_for(text: str, address: str) -> None:
    assert address in redact(text, learned=False).text  # the rules alone leave it
    output = redact(text)
    assert address not in output.text, output.text
    assert output.found == ["address"]


@pytest.mark.xfail(strict=True, reason="known miss: a Turkish street line read too weakly to start a span")
def test_a_turkish_street_line_is_removed() -> None:
    text = "Kargoyu şu adrese gönderin: Bağdat Cad. No:45 Daire:3, 34728 Kadıköy, teşekkürler"
    assert "34728" not in redact(text).text


def test_ordinary_messages_keep_their_numbers() -> None:
    for text in (
        "Order 4471 shipped on 12 March, 3 boxes, tracking 1Z999AA10123456784.",
        "第3排17号座位，晚上7点半开场，两张票一共360元。",
        "Room 204 is booked for the 14:00 review; bring the Q3 figures.",
    ):
        assert redact(text).text == text
