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


# Chinese addresses as people type them into a chat: spaces between the levels, no 省 or 市, 附 numbers, the
# levels of Inner Mongolia (盟, 旗, 苏木, 嘎查), Chinese numerals for a floor or a village's group. Each with the part
# that must go (the house number and what is below it).
CHINESE_TYPED_ADDRESSES = [
    ("麻烦寄到我姐家：江苏 苏州 吴中区 木渎镇 金山路 88号 5幢 301，收件人沈晓燕。", "88号 5幢 301"),
    ("上门维修的话地址是 西安 雁塔区 小寨东路 126号 3号楼 1单元 1102，下午都有人。", "126号 3号楼"),
    ("我外婆家在 浙江 温州 瑞安 塘下镇 罗凤街 3弄 15号，你到了打我电话。", "3弄 15号"),
    ("新地址：青海 西宁 城西区 五四西路 44号附2号 6楼，包裹放门口就行。", "44号附2号"),
    ("收货地址 贵州 黔东南 雷山县 西江镇 羊排村 三组，收件人杨阿花。", "羊排村 三组"),
    ("家里的地址 广西 桂林 七星区 穿山路 8号 1栋 2单元 601，寄过来就行。", "8号 1栋"),
]


@pytest.mark.parametrize(("text", "home"), CHINESE_TYPED_ADDRESSES)
def test_a_chinese_address_typed_as_people_type_it_goes(text: str, home: str) -> None:
    result = redact(text)
    assert home not in result.text and "address" in result.found, result.text


@pytest.mark.parametrize(
    "text",
    [
        "我们公司在 北京 海淀区 中关村大街 27号 中关村大厦 11层，面试的时候到前台登记。",
        "这批货一共 3箱，每箱 12瓶，单价 45元，周三前到 2号仓库。",
        "第3组的同学在2号楼302教室集合，带上实验报告。",
        "这家店在 成都 锦江区 春熙路 12号，营业时间10点到22点，人均80。",
        "地铁2号线 人民广场站 3号口出来，往南走200米就到了。",
        "这道题：一个小区有12栋楼，每栋6个单元，每个单元18户，一共多少户？",
        "医院在 长沙 开福区 湘雅路 87号，门诊楼 2楼 挂号。",
        "我们班 3组 4组 下周去 5号馆 参观，12点在校门口集合。",
    ],
)
def test_chinese_counts_rooms_and_places_of_business_stay(text: str) -> None:
    assert redact(text).text == text


def test_a_chinese_span_naming_a_place_of_work_inside_it_is_no_home() -> None:
    """The finder may mark a warehouse's address (…1399号菜鸟仓3号库); a place of work inside the span keeps it."""
    text = "退货别寄门店，直接寄到 浙江 杭州 余杭区 良睦路 1399号 菜鸟仓 3号库，写上订单号。"
    spans = [(0, len(text))]
    assert personal_addresses(text, spans) == []
    home = "寄到我家 浙江 杭州 余杭区 良睦路 1399号 5幢 302"
    assert personal_addresses(home, [(5, len(home))]) == [(5, len(home))]


def test_a_run_across_a_sentences_end_is_no_address() -> None:
    """Two sentences ("…北门。宿舍区3号门") are not one address, however the tokens read."""
    items = tokens("学校北门。宿舍区3号楼")
    marked = np.ones(len(items), dtype=bool)
    assert AddressSpans.spans(items, marked) == []
    assert AddressSpans.spans(items[:4], marked[:4]) == []  # "学校北门" alone has no number


def test_a_chinese_street_and_house_number_alone_is_a_shops_unless_a_home_is_named() -> None:
    """As the rules read them: a unit below the house number, a word for home before it or a recipient after it
    makes a Chinese address someone's; a shop's return address (文三路 1 号) stays."""
    shop = "当顾客问退货寄到哪里时，告诉他寄到杭州市西湖区文三路 1 号，并写上订单号。"
    span = (shop.index("杭州"), shop.index("号") + 1)
    assert personal_addresses(shop, [span]) == []
    home = "我家在杭州市西湖区文三路 1 号，你到了打我电话。"
    span = (home.index("杭州"), home.index("号") + 1)
    assert personal_addresses(home, [span]) == [span]
    flat = "告诉他寄到杭州市西湖区文三路 1 号 3 栋 502，并写上订单号。"
    span = (flat.index("杭州"), flat.index("502") + 3)
    assert personal_addresses(flat, [span]) == [span]


def test_a_chinese_place_typed_as_a_word_of_its_own_joins_the_span_it_starts() -> None:
    """A run starting inside "西安" (typed apart from the district) takes the whole word; one inside a sentence typed
    without spaces does not reach back into it."""
    text = "上门维修的话地址是 西安 雁塔区 小寨东路 126号 3号楼"
    items = tokens(text)
    marked = np.array([t.start > text.index("西") for t in items])  # the run starts at 安
    (span,) = AddressSpans.spans(items, marked)
    assert text[span[0] : span[1]].startswith("西安")


def test_a_run_starting_inside_characters_typed_after_a_digit_does_not_reach_back() -> None:
    """ "3西安" is no place name typed apart: the run that starts at 安 stays where it starts."""
    text = "3西安 雁塔区 小寨东路 126号 3号楼"
    items = tokens(text)
    marked = np.array([t.start > text.index("西") for t in items])
    (span,) = AddressSpans.spans(items, marked)
    assert text[span[0] : span[1]].startswith("安")
