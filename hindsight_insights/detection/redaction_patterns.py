"""The rule tables of redaction (redaction.py): what no library finds, written from the formats themselves.

Everything here runs on folded text (text.fold: NFKC, lower case, simplified Chinese), so each rule is written once,
in lower case. Each rule is a design decision, not a phrase seen in data:

  a value after its label      身份证 / 银行卡 / 护照 / passport (and its name in the languages people travel with) /
                               工号 / employee number … then the number, whatever its checksum (the label says what
                               it is), or the label after the number; 密码 / password / secret / token / AccessKey …
                               then the value (or a few words later: "pwd for the scanner is …"); an alarm, door or
                               key-safe code, a PIN, a 2FA backup or one-time code (or a door's number where a code
                               lock is spoken of); a user name and its password after a login label;
  a passport number's shape    near a word for a passport or a travel document (a table's column, a sentence apart);
  a passport's machine-readable zone, its second line (number, date of birth, expiry);
  vendor key prefixes          sk-, sk-proj-, AKIA, LTAI, ghp_, xoxb-, pcsk_, … (a prefix is a format);
  key blocks                   PEM and OpenSSH private keys, header to footer (or to the end of the base64 when cut);
  credentials in a URL         scheme://user:password@host;
  a card's expiry              right after a card number found, with its label (exp 09/27, 有效期至 03/28);
  a date of birth              a date next to a birth label (出生, 生日, born, DOB, né le, geboren am …), a month and
                               year or a compact date after one too;
  an address                   the Chinese grammar (省/市/州/区/县/镇 … 路/街/巷/弄 + 号, then 院/栋/单元/室/房), a
                               home in an estate or a village (小区/花园/村 … 号楼/单元/组/室, 村 + 号); a street
                               line in any of the Latin-script orders (42 Elm Street, 12 rue de la Paix, Hauptstraße
                               5) with a postcode (unless a business place is named before it), or with a flat or a
                               word for home; a numbered line and a postcode only an address has (H91 F2X7, TX 75093);
  an e-mail address.
"""

from __future__ import annotations

import re

from hindsight_insights.detection.text import RAW_SENTENCE_END

# ------------------------------------------------------------------------------------------ numbers by label
# Between a label and its value: 号/号码/number/no./#, then 是/为/:/is.
# The value may sit in quotes or brackets: 身份证号「…」, card no. (…), "…".
_JOIN = (
    r"(?:[\s,-]*(?:号码|号|码|number|no\.?|num|#|id|nr\.?|n°|nº|n\.|numéro|número|numero|nummer))?\s*(?:[:=]|是|为|is|:)?\s*"
    # (a "that is" after the colon, as one says it: "matricule : c'est 0047392K", "staff no.: it's 20417")
    r"(?:(?:c['’]est|it['’]s|that['’]s|es|ist)\s+)?"
    r"[\"'“‘「『(\[【<]?\s*"
)
# Between a number and the label after it: "(", "is my", "是我的", "为他的".
_BEFORE_LABEL = r"(?:[(（]\s*|(?:is|was|为|是)\s*)"
_OWNER_ZH = r"(?:我们的|我的|他的|她的|我|他|她)"
_LABEL_AFTER = rf"{_BEFORE_LABEL}(?:my|his|her|their|our|{_OWNER_ZH})?\s*"
# An account in Chinese, in either character for 账.
_ACCOUNT_ZH = r"(?:账号|账户|帐号|帐户)"
# 工号 and the other Chinese names of an employee number.
_EMPLOYEE_NUMBER_ZH = r"工号|(?:员工|职工|雇员)(?:编号|号码|代码|号)|工牌号|工卡号"
# An employee number: letters (a site's or a company's prefix) and digits, in up to four groups joined by a dash, a
# slash or an underscore (A20317, E-448120, 77-3048, HZ-2019-0457, 0087421K, a country's and a site's
# CN-SH-30917, a check letter after a dash: 004817-K), three digits at least.
_EMPLOYEE_NUMBER = (
    r"(?=(?:[a-z_/-]*\d){3})(?:[a-z]{1,4}[-_]?){0,2}\d{2,10}[a-z]?(?:[-/_](?:[a-z]{1,4}[-_]?)?\d{2,8}[a-z]?){0,3}"
    r"(?:-[a-z](?![a-z]))?"
)
# A resident ID as people write it: 18 characters (or the old 15 digits), whole or in groups (6-8-4, 6-4-4-4,
# 4-4-4-4-2).
_RESIDENT_ID = (
    r"\d{6}[\s-]?(?:\d{8}|\d{4}[\s-]?\d{4})[\s-]?\d{3}[\dx]|\d{6}[\s-]?\d{4,8}[\s-]?\d{3,4}[\dx]?|"
    # (in fours, as a card is read out: 4201 1119 5607 0839 10)
    r"\d{4}(?:[\s-]\d{4}){3}[\s-]\d[\dx]"
)
# ICAO 9303: up to 9 letters and digits (E12345678, 12AB34567, C01X00T47); five digits at least, so that a word
# after the label ("passport office") is no number; printed in groups too (E1234 5678): one space or dash at most
# between two characters.
_PASSPORT_NUMBER = r"(?=(?:[a-z]*[\s-]?\d){5})[a-z\d](?:[\s-]?[a-z\d]){5,8}"
# Right after its label a passport number needs only two digits: some states mix letters and digits throughout
# (the Netherlands' NU7K4RJ13), written as one token; a word after the label ("passport office") has none.
_LABELLED_PASSPORT_NUMBER = rf"{_PASSPORT_NUMBER}|(?=(?:[a-z]*\d){{2}})[a-z\d]{{6,9}}"
# A passport in the languages people travel with.
_PASSPORT_WORDS = (
    r"护照|passport|passeport|reisepass|pasaporte|passaporto|passaporte|paspoort|旅券|パスポート|여권|pasaport|paszport|"
    r"паспорт|pasport|paspor|passnummer|pass-nr|hộ chiếu|หนังสือเดินทาง|útlevél|passin numero|passinumero|"
    # (the South Slavic languages in both scripts, Greek, Romanian, Arabic, Hebrew, Hindi)
    r"pasoš|пасош|putovnic|διαβατήρι|pașaport|paşaport|جواز سفر|جواز السفر|דרכון|पासपोर्ट|"
    # (Catalan and Maltese, Belarusian, Georgian, Armenian, Persian, Urdu, Bengali, Tamil, Nepali, Icelandic, Welsh,
    # Swahili, Czech and Slovak, Slovenian, Kazakh)
    r"passaport|пашпарт|პასპორტ|անձնագիր|گذرنامه|پاسپورٹ|পাসপোর্ট|கடவுச்சீட்டு|राहदानी|vegabréf|pasbort|pasipoti|"
    r"cestovní pas|cestovný pas|potni list|төлқұжат|"
    # (the Baltic languages and Estonian, as their forms write the label: "Paso Nr.", "pases Nr.", "passi nr"; only
    # before "nr", as paso and pase are other words in Spanish)
    r"(?:pas(?:as|o|e|es|u|i)|passi)(?=\s*nr\b)"
)
# Near a number, the names of a passport's parts and of travel documents say the same (not as a label: "证件" alone
# is any card).
PASSPORT_WORD = re.compile(
    rf"{_PASSPORT_WORDS}|data page|travel document|identity document|id document|资料页|旅行证件|出入境证件"
)
# What passport numbers look like when no label sits right before them (ICAO 9303 leaves the shape to each state):
# one to three letters and six to eight digits (E12345678, EH1234567, PAC123456, MI123456), eight or nine digits,
# two digits, two letters and five digits (France), or nine letters and digits from the German alphabet with at least
# two digits (C01X00T47). Taken only near a word for a passport (PASSPORT_NEARBY characters either side): in a table
# under its column, after the country's name, or a sentence apart.
PASSPORT_SHAPE = re.compile(
    r"(?<![\da-z-])(?:[a-z]{1,3}\d{6,8}|\d{8,9}|\d{2}[a-z]{2}\d{5}|"
    r"(?=(?:[a-z]*\d){2})[cfghjklmnprtvwxyz][cfghjklmnprtvwxyz\d]{8})(?![\da-z-])"
)
PASSPORT_NEARBY = 160
# A form field's value follows its label's colon (matched on the few characters before the value, up to its start),
# or the Armenian one (՝), or a dash set apart ("pases numurs — LF3308417").
FIELD_VALUE_BEFORE = re.compile(r"(?:[:：՝]|\s[—–])\s*$")
# A whole date with a year of birth (1900-2015) as a form field's value, alone on its line: in a form that also holds
# a document number, the holder's date of birth whatever the language of its label (Ծննդյան ամսաթիվ՝ 21.09.1976,
# დაბადების თარიღი: 12.03.1985); redaction takes it only beside such a number (redaction._find).
# (the month may be a word of the form's language, and the year the Solar Hijri calendar's 1300-1399 (1921-2020), in
# Persian digits or ours, as Iranian forms count it: ۱۸ مرداد ۱۳۶۲)
_OLD_YEAR = r"(?:19\d{2}|200\d|201[0-5]|[1۱١][3۳٣]\d{2})(?!\d)"
FORM_OLD_DATE = re.compile(
    rf"(?:[:：՝]|\s[—–])[ \t]*(?P<value>\d{{1,2}}[./-]\d{{1,2}}[./-]{_OLD_YEAR}|"
    rf"{_OLD_YEAR}[./-]\d{{1,2}}[./-]\d{{1,2}}|\d{{1,2}}\.?[ \t]+[^\W\d_]{{3,12}}\.?,?[ \t]+{_OLD_YEAR}|"
    rf"[^\W\d_]{{3,12}}\.?[ \t]+\d{{1,2}},?[ \t]+{_OLD_YEAR})[ \t]*$",
    re.MULTILINE,
)
# Eight digits alone (Sweden's, Norway's) are any number's shape: a passport's only after the word, in the same
# sentence and within this many characters ("passport number …, he emailed it: 84719306").
PASSPORT_EIGHT_DIGITS_AFTER = 80
SENTENCE_END = RAW_SENTENCE_END
# What may stand between the word and its number for the number to be labelled by it: "passport no. ", "护照号码："
PASSPORT_JOIN = re.compile(r"[^\w]*(?:号码|号|编号|证号|no\.?|number|num|nr\.?|n°|nº|szám|száma)?[^\w]*")
NUMBER_LABELS: list[tuple[str, re.Pattern[str]]] = [
    (
        "id_card",
        re.compile(
            rf"(?:身份证|身份证件|证件号|居民身份|公民身份|身份号|national id|resident id|id card|identity card|"
            rf"(?:chinese|china|prc|mainland)\s+id|"
            rf"(?:(?:my|his|her|their|your)\s+|(?<![a-z]\s)(?<![a-z]))id(?=\s*(?:number|no\b|no\.|num|#|:)))"
            # a country or an issuer in brackets after the label: "resident ID card (PRC) …"
            rf"(?:\s*[(（][^()（）\d]{{1,16}}[)）])?{_JOIN}"
            rf"(?P<value>{_RESIDENT_ID})(?![\da-z])"
        ),
    ),
    (
        "bank_card",
        re.compile(
            r"(?:银行卡|银联卡|信用卡|借记卡|储蓄卡|卡号|银行账号|收款账号|银行账户|card|bank account|"
            # a card's network names the card: American Express, Diners Club, Visa, Mastercard, JCB, UnionPay
            r"(?:运通|大来|万事达|amex|american express|diners(?: club)?|visa|master ?card|jcb|unionpay)"
            r"(?:\s*(?:卡|card))?|"
            rf"account(?=\s*(?:number|no))){_JOIN}"
            # grouped the way the networks print them: 4-4-4-4, 4-6-5 (Amex), 4-6-4 (Diners), or whole
            r"(?P<value>\d{4}(?:[\s-]?\d{2,6}){2,4}(?:[\s-]?\d{1,4})?)(?![\da-z])"
        ),
    ),
    (
        "bank_card",
        # an account's number after its label and its holder's name (结算账户：枕溪酒店管理有限公司 3301 0400 0000 0000
        # 4826, "bank account: Harbour Bikes Ltd 2034 1187 5530"): the name comes between, the number is the account
        re.compile(
            r"(?:(?:结算|收款|对公|银行|开户)?(?:账户|账号|帐户|帐号)|(?:bank )?account)"
            # (not a reference's: "account: order ref, 2024 0512 3344")
            r"\s*(?:[:：]|是|为|is)\s*"
            r"(?:(?!order|invoice|ref|tracking|订单|单号|发票|运单)[^\d\n:：;；。]){2,40}?[\s:：,，]\s*"
            # (ten digits at least: "renews 2027 01 15" is a date)
            r"(?P<value>(?=(?:\d[\s-]?){10})\d{4}(?:[\s-]?\d{2,6}){2,5}(?:[\s-]?\d{1,4})?)(?![\da-z])"
        ),
    ),
    (
        "bank_card",
        # a UnionPay number (the network's prefix 62, 16 to 19 digits, whatever its check digit) after any word for a
        # card that ends in 卡: 工资卡, 这张卡, 原卡, 农行卡上 (a wrong check digit is still someone's card, labelled)
        re.compile(r"卡(?:号码?|上|里)?\s*(?:[:：]|是|为)?\s*[,，]?\s*(?P<value>62\d{14,17})(?!\d)"),
    ),
    (
        "bank_card",
        # a card's security code after its label (CVV 614, 安全码：382): with the number it pays
        # (Amex calls it the CID, four digits on the front: "exp 09/28, CID 7312")
        re.compile(
            r"(?<![a-z])(?:cvv2?|cvc2?|csc|cid|cvn|card security code|card verification (?:code|value|number)|"
            r"安全码|安全碼|卡背面后三位)\s*(?:[:：=]|是|为)?\s*"
            r"(?P<value>\d{3,4})(?!\d)"
        ),
    ),
    (
        "passport",
        # 护照编号/证号 label it too; "passport: no." as well; and the languages people travel with.
        re.compile(
            rf"(?:{_PASSPORT_WORDS})"
            rf"(?:编号|证号|证件号码|证件号|番号|번호)?(?:\s*\([^()]{{1,20}}\))?"
            # a few words between the label and the number: "passport (Germany):", "passport for Zhang Wei is"
            # (within the sentence: "passport? my library membership is …" is another number)
            r"(?:[^\d\n:：=?!。]{1,30}?(?:[:：=]|\bis\b|为|是))?(?:\s*[:=])?"
            rf"{_JOIN}"
            rf"(?P<value>{_LABELLED_PASSPORT_NUMBER})(?![\da-z])"
        ),
    ),
    (
        "id_card",
        # the label after the number: "11010519491231002X 是我身份证号", "… (my ID card)"
        re.compile(
            rf"(?<![\da-z])(?P<value>{_RESIDENT_ID})(?![\da-z])\s*{_LABEL_AFTER}"
            r"(?:身份证|居民身份证|公民身份号码|(?:national |resident )?id(?: card| number| no)|identity card)"
        ),
    ),
    (
        "bank_card",
        # the label after the number: "6222 0212 3456 7890 124 是我的工资卡号", "4111 … (my visa card)"
        re.compile(
            r"(?<![\da-z])(?P<value>\d{4}(?:[\s-]?\d{2,6}){2,4}(?:[\s-]?\d{1,4})?)(?![\da-z])\s*"
            # (in English only a card someone owns: "(card payment)", "is the card limit" are no label)
            rf"{_BEFORE_LABEL}(?:{_OWNER_ZH}?[\u4e00-\u9fff]{{0,4}}?"
            r"(?:银行卡|卡号|信用卡|借记卡|储蓄卡|工资卡)|(?:my|his|her|their|our)\s+(?:[a-z]+ ?)?card\b)"
        ),
    ),
    (
        "passport",
        # the label after the number: "E12345678 (passport)", "12AB34567 is my passport number", "…为我的护照号"
        re.compile(
            rf"(?<![\da-z])(?P<value>{_PASSPORT_NUMBER})\s*(?:[(（]\s*|(?:is|was|为|是)\s*(?:my|his|her|their|我的|他的|她的)?\s*)"
            r"(?:护照|passport)"
        ),
    ),
    (
        "passport",
        # the second line of a passport's machine-readable zone (ICAO 9303 TD3): the number, its check digit, the
        # nationality, the date of birth and its check digit, the sex, the expiry
        # (the whole line goes: it holds the date of birth too)
        re.compile(r"(?<![\da-z<])(?P<value>[a-z\d<]{9}\d[a-z<]{3}\d{6}\d[mfx<]\d{6}\d[a-z\d<]{0,16})"),
    ),
    (
        "employee_id",
        re.compile(
            rf"(?:{_EMPLOYEE_NUMBER_ZH}|员工卡号|"
            r"(?:employee|staff|emp|personnel|payroll|badge|associate|worker)(?=\s*(?:number|no\b|id\b|#))|\beid\b|"
            r"personalnummer|personalnr\.?|mitarbeiternummer|mitarbeiter-?nr\.?|matricule|matrícula|matricola|"
            r"(?:número|n\.?\s?[ºo]|núm\.?) de empleado|numero di matricola|personeelsnummer|"
            # (Japanese, as folded to simplified characters: 社員番号; Vietnamese)
            r"社员番号|社员id|従业员番号|(?:mã|id|số) nhân viên)"
            # a few words between, within the clause: "工号，我的是 HS207731", "staff ID - mine is …", "… ist"
            # (or what the user filled in: "要填工号，我填的 GZ-0419827"; or "employee number's …")
            # (a dash may stand for the colon: "Staff ID - 7720193"; the value may open the next sentence: "… my staff
            # number. I think it's 004817-K")
            r"(?:[^\d\n:：=?!。？！]{1,28}?(?:[:：=]|\b(?:is|ist|est|es|é|è)\b|(?<=\w)['’]s\b|\s[-–—](?=\s)|为|是|"
            # (or straight after the verb of filling it in: "员工编号填 DH-0392", "工号输入 …")
            r"(?<=[填写输])的|(?<=[填写入])))?"
            rf"{_JOIN}"
            # (a number in groups too: 77-3048, HZ-2019-0457; and a check letter after it: matricule 0087421K)
            rf"(?P<value>{_EMPLOYEE_NUMBER})(?![\da-z])"
        ),
    ),
    (
        "employee_id",
        # the label after the number: "HS207731 是我的工号", "E-4410 (my staff ID)"
        re.compile(
            rf"(?<![\da-z])(?P<value>{_EMPLOYEE_NUMBER})(?![\da-z])\s*{_LABEL_AFTER}"
            rf"(?:{_EMPLOYEE_NUMBER_ZH}|(?:employee|staff|personnel|payroll|badge) (?:number|id|no))"
        ),
    ),
    (
        "iban",
        re.compile(
            # (or after an account's label, whatever its check digits: "Mon numéro de compte : BE71 0635 8219 4742")
            r"(?:iban|\b(?:bank )?account|konto|rekening|(?:numéro|número|numero|n°|no\.?)\s+de\s+(?:compte|cuenta)|"
            r"\bcompte|\bcuenta|\bconto(?: corrente)?|账号|账户|帐号|帳號)"
            rf"{_JOIN}(?P<value>[a-z]{{2}}\d{{2}}(?:\s?[a-z0-9]{{4}}){{2,7}}(?:\s?\d{{1,4}})?)(?![\da-z])"
        ),
    ),
    (
        "bank_account",
        # an account number after its label or its bank's name (6-25 digits, whatever its checksum): 账号/账户,
        # "account 71350948", "中国工商银行 6212 …", a UK sort code, an Australian BSB, a US routing number
        re.compile(
            rf"(?:{_ACCOUNT_ZH}|[\u4e00-\u9fff]{{2,8}}银行(?:[\u4e00-\u9fff]{{1,8}}[支分]行)?"
            rf"(?:{_ACCOUNT_ZH}|卡号)?|\b(?:account|acct|a/c)(?:\s*(?:number|no\.?|num|#))?|"
            r"\bsort ?code|\bbsb|\brouting(?: number| no\.?)?)"
            # (a note in brackets after the label: 退款账户（借记卡）：…)
            r"(?:\s*[(（][^()（）\d]{1,16}[)）])?"
            r"\s*(?:[:=]|是|为|is|:)?\s*[\"'“‘「(\[]?\s*(?P<value>\d(?:[\s-]?\d){5,24})(?![\da-z])"
        ),
    ),
    (
        "phone",
        # the label after the number: "07911 483 226 - that's my mobile", "13912345678 是我的手机"
        re.compile(
            r"(?<![\d+])(?P<value>\+?[\d(][\d\s()-]{6,18}\d)(?!\d)\s*[-–—,:(（]?\s*"
            r"(?:that's|that is|this is|is|这是|是|就是)?\s*(?:my|我的|我)\s*(?:own\s+)?"
            r"(?:mobile|cell|phone|number|手机|电话)"
        ),
    ),
    (
        "phone",
        # a number to reach the speaker on: "ring me on 07912 384556", "text me at …"
        re.compile(
            r"\b(?:ring|call|text|phone|reach|whatsapp|message)\s+me\s+(?:back\s+)?(?:on|at)\s*:?\s*"
            r"(?P<value>\+?[\d(][\d\s()-]{6,18}\d)"
        ),
    ),
    (
        "phone",
        re.compile(
            r"(?:我的|my|home|mobile|家里|家庭|住宅|私人|private|personal|cell)\s*(?:的)?\s*(?:电话|手机|号码|phone|number|"
            r"whatsapp|微信)(?:\s*(?:号码|号|number))?\s*(?:[:=]|是|为|is|:)?\s*(?P<value>\+?[\d(][\d\s()-]{6,18}\d)"
        ),
    ),
    (
        "id_card",
        # a social-insurance or tax number after its label, whatever its check: the UK's National Insurance number
        # (JK 41 07 63 B), a US Social Security number, Ireland's PPS, the Netherlands' BSN, Spain's DNI and NIE,
        # Italy's codice fiscale, France's and Germany's social-security and tax numbers; and a driver's licence,
        # a health card (社保卡, NHS, Medicare) and a student's number
        re.compile(
            r"(?:national insurance|\bni(?=\s*(?:number|no\b|#))|\bnino\b|social security|\bssn\b|\bpps\b|"
            r"social insurance|tax file|\btfn\b|\bbsn\b|burgerservicenummer|s[ée]curit[ée] sociale|steuer-?id|"
            r"steueridentifikationsnummer|sozialversicherungsnummer|personnummer|codice fiscale|\bdni\b|\bnie\b|"
            r"\bnif\b|社保号|社会保障号|社会保险号|"
            # a driver's licence, a health card and a student's number, which name one person as well
            r"driv(?:er'?s?|ing) licen[cs]e|驾驶证|驾照|nhs (?:number|no\b)|medicare (?:number|card|no\b)|"
            r"health (?:card|insurance) (?:number|no\b)|社保卡|医保卡|社会保障卡|学号|student (?:number|id))"
            rf"{_JOIN}"
            r"(?P<value>[a-z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[a-d]?|\d{3}[\s-]?\d{2}[\s-]?\d{4}|"
            r"[a-z]{6}\d{2}[a-z]\d{2}[a-z]\d{3}[a-z]|[a-z]{0,3}\d(?:[\s.-]?\d){5,17}[a-z]{0,2})(?![\da-z])"
        ),
    ),
    (
        "id_card",
        # the UK's National Insurance number, spaced as it is printed (two letters, three pairs of digits, a letter
        # A-D; the prefixes HMRC never issues left out): nothing else is written that way
        re.compile(
            r"(?<![a-z\d])(?P<value>(?!bg|gb|nk|kn|tn|nt|zz)[a-ceghj-prstw-z][a-ceghj-nprstw-z]"
            r" \d{2} \d{2} \d{2} [a-d])(?![a-z\d])"
        ),
    ),
]

# A markdown or pipe table labels its values in the header row, not beside them (| Name | Passport | DOB |): the
# kind of a column by its header, most specific first. A cell under such a header is that kind when it has a digit
# (an e-mail address when it has "@"); a name or a country stays.
TABLE_ROW = re.compile(r"^[^\S\n]*\|?(?:[^|\n]*\|)+[^|\n]*$", re.MULTILINE)
TABLE_RULE = re.compile(r"^[^\S\n]*\|?(?:[^\S\n]*:?-{2,}:?[^\S\n]*\|)+(?:[^\S\n]*:?-{2,}:?[^\S\n]*)?$")
TABLE_COLUMNS: list[tuple[str, re.Pattern[str]]] = [
    ("passport", PASSPORT_WORD),
    (
        "birth_date",
        re.compile(r"出生|生日|생년월일|birth|\bdob\b|d\.o\.b|né|geboren|geburt|nacimiento|nascita|naissance"),
    ),
    ("id_card", re.compile(r"身份证|证件号|居民身份|公民身份|national id|resident id|id card|id number|id no|주민")),
    ("bank_card", re.compile(r"卡号|银行卡|信用卡|card")),
    ("iban", re.compile(r"\biban\b")),
    ("bank_account", re.compile(rf"{_ACCOUNT_ZH}|account|sort code|bsb|routing")),
    ("employee_id", re.compile(rf"{_EMPLOYEE_NUMBER_ZH}|employee|(?:staff|personnel|payroll|badge) (?:no|id|number)")),
    ("phone", re.compile(r"手机|电话|联系方式|phone|mobile|\btel\b|전화|휴대")),
    ("email", re.compile(r"邮箱|电邮|e-?mail|이메일")),
    ("address", re.compile(r"地址|住址|address|adresse|anschrift|dirección|indirizzo|주소")),
]

# A resident ID's number a few words after its label, within the sentence ('有一栏 "resident ID card number"，我填的
# 420106…'): taken when it has a resident ID's shape (redaction_checks.resident_id_shape), whatever its check digit.
ID_A_FEW_WORDS_AFTER = re.compile(
    r"(?:身份证|居民身份|公民身份|resident id|national id|id card|identity card)[^\d\n。!?！？]{1,30}?"
    r"(?<![\da-z])(?P<value>\d{6}[\s-]?\d{8}[\s-]?\d{3}[\dx])(?![\da-z])"
)
# A text that names the resident ID card anywhere (an error message about it, the household register it was copied
# from: "提示“身份证号码校验错误”。我对着户口本看了三遍：450103…"): a number of its shape in it is one, whatever its
# check digit (redaction_checks.resident_id_shape).
NAMES_A_RESIDENT_ID = re.compile(
    # (and the identity check a number was typed into: 实名认证, "身份信息校验失败")
    r"身份证|证件号|居民身份|公民身份|户口本|户口簿|实名|身份信息|身份核验|身份验证|"
    r"resident id|national id|id card|identity card"
)

# ------------------------------------------------------------------------------------------ secrets by label
# A character of a password: printable ASCII, and the Latin letters of the languages people set passwords in
# (Elbfähre7#Nord).
_SECRET_CHAR = r"[\x21-\x7e\u00a1-\u024f]"
# The value after 密码/password/…: up to the next space, clause punctuation or Chinese character.
# (a bracket opened before Chinese ends it too: 密码：Ky7#pW2q（首次登录后修改）, its full-width bracket folded to "(")
SECRET_END = r"(?=[\"'”]?(?:[\s,。，;；、)）]|[.!?](?:\s|$)|$|[\u4e00-\u9fff]|\((?=[\u4e00-\u9fff])))"
# The word for a password in the languages of the forms people fill in.
_PASSWORD_WORD = (
    r"暗码|\b(?:contraseña|contrasena|senha|passwort|kennwort|mot de passe|wachtwoord|hasło|haslo|пароль|kata sandi|"
    # (and French's abbreviation, mdp)
    # (Portugal's palavra-passe, Vietnamese mật khẩu, Malay kata laluan)
    r"şifre|lösenord|salasana|heslo|jelszó|passord|adgangskode|mdp|palavra[- ]passe|mật khẩu|kata laluan)\b|"
    r"パスワード|비밀번호"
)
PASSWORD = re.compile(
    # (Dutch abbreviates its word as ww, French as mdp: a label only before a colon, "ww: …")
    r"(?P<label>(?<![a-z0-9_])[a-z0-9_]{0,40}?(?:password|passwd|pwd)|\bpw\b|\b(?:pass|ww)(?=\s*[:=])|"
    r"pass(?:code|phrase)|密码|口令|"
    # ("user / pass 7Herons&Kale": pass before what can only be a password, a letter and a digit and a symbol in it)
    r"\bpass(?=\s+(?=\S*[a-z])(?=\S*\d)(?=\S*[^\sa-z0-9])\S{6,})|"
    rf"{_PASSWORD_WORD})"
    # (never across a line: an empty "DB_PASSWORD=" is not the next line's password)
    # ("the password's …": is, contracted)
    r"(?P<sep>[^\S\n]*(?:[:=]|是|为|改成了|改成|改为|设为|设置为|(?:is|was|(?<=\w)['’]s)(?:[^\S\n]+now)?)[^\S\n]*[\"'“]?[^\S\n]*|"
    r"[^\S\n]+|"
    # (or nothing at all after a Chinese label, when a digit follows: 密码4719#)
    r"(?<=密码|口令)(?=\d))"
    rf"(?P<secret>{_SECRET_CHAR}{{4,64}}?){SECRET_END}"
)
# What a sentence says about a password after "is" rather than the password itself ("$REGISTRY_PASSWORD is empty in
# merge request pipelines", "the password was wrong", "password is case-sensitive").
PASSWORD_STATE = re.compile(
    r"(?:empty|blank|missing|unset|set|wrong|incorrect|invalid|expired|required|correct|right|fine|ok|okay|null|none|"
    r"undefined|masked|protected|hidden|encrypted|hashed|stored|saved|changed|reset|weak|strong|short|long|too|not|"
    r"still|case-sensitive|the|a|an|being|also|only|same|different|optional|mandatory|visible|shown|printed|"
    r"needed|ignored|rejected|accepted|locked|disabled|enabled)"
)
# A passphrase in Chinese after 口令 or 暗号 and a colon or 是 (口令：芝麻开门123, 暗号是天王盖地虎): the words are the
# secret, to the clause's end; not a question about it (口令是什么).
CHINESE_PASSPHRASE = re.compile(
    r"(?:口令|暗号)\s*(?:[:：]|是|为)\s*[“\"']?"
    r"(?P<secret>(?![^，。；;,\n]*(?:什么|啥|多少|哪|吗|呢|？|\?))[\u4e00-\u9fffa-z\d#@!_-]{2,16})"
    r"(?=[”\"']?(?:[\s，。；;,！!、]|$))"
)
# A password a few words after its label, before "is" or ":" ("the pwd for the scanner in room 3 is …",
# "password of the guest wifi: …"); the caller takes it only when it looks like one (a digit or a symbol in it).
PASSWORD_FOR = re.compile(
    r"(?<![a-z0-9_])(?:password|passwd|pwd|passcode|passphrase|密码|口令)\s*(?:for|of|to|on)\s+[^\n:;。，；]{1,40}?"
    r"(?:\s(?:is|was)\s|[:=]|是|为)\s*[\"'“]?"
    rf"(?P<secret>{_SECRET_CHAR}{{4,64}}?){SECRET_END}"
)
# A password a few words after its label in the same sentence, with no "is" or ":" ("密码我设的 …", "a senha do portal
# mudou, agora é …"); the caller takes it only when it cannot be a word (letters and digits, or a symbol, in it).
PASSWORD_A_FEW_WORDS = re.compile(
    rf"(?:(?<![a-z0-9_])(?:password|passwd|pwd|passcode|passphrase|pass(?=\s+(?:is|was)\s))|密码|口令|{_PASSWORD_WORD})"
    # (and a colon may end the words, "the same password everywhere: …", a space after it: "host:5432/app" is no colon
    # of prose)
    r"[^\n.!?;:。！？；：]{1,60}?(?::\s+|：\s*)?(?<=[\s\u4e00-\u9fff\"'“=：])"
    rf"(?P<secret>(?![\"'`])(?={_SECRET_CHAR}*?[a-z])(?={_SECRET_CHAR}*?\d){_SECRET_CHAR}{{6,64}}?){SECRET_END}"
)
# A card's expiry date right after its number, with its label: ", exp 09/27", " (expires 08/2029)", "，有效期至 03/28".
CARD_EXPIRY = re.compile(
    r"[\s,，;；(（]{0,3}(?:exp(?:iry|ires|\.)?(?: date)?|valid (?:thru|through|until|to)|good thru|"
    r"有效期(?:至|到)?|到期(?:日)?)"
    r"\s*[:：]?\s*(?P<value>(?:0[1-9]|1[0-2])\s*/\s*(?:20)?\d{2})(?!\d)",
    re.IGNORECASE,
)
# A code that opens something, after its label: an alarm, a door, a gate, a key safe, a PIN ("the alarm code is 4471",
# "key safe by the back door: 9032", 门禁码 2580#). A few words may come between the label and "is" or ":".
ACCESS_CODE = re.compile(
    # (PIN typed straight after Chinese: 管理员PIN：…, 门禁PIN码)
    r"(?:(?<![a-z0-9])pin(?: code| number|码)?|"
    r"(?:alarm|door|gate|access|entry|entrance|lockbox|garage|building|safe|(?:pad|smart |combination )?lock)\s?code|"
    # (and the keypad a code is typed on: "Front door keypad: 7304#")
    r"key ?safe|lock ?box|keypad|门禁码|门禁密码|门禁(?=\s*[:：])|"
    # (an alarm or a door named right before what is typed on its keypad, a code closed by # or *: "Roastery alarm
    # 4417# (set it if you're last out)")
    r"(?:alarm|door|gate|shutter|garage|报警器|警报|防盗门|卷帘门|大门)(?=\s*[:：]?\s*\d{3,8}[#*])|"
    # (a lock named before a colon is its combination: "Ropeway shed padlock: 4-1-9-0-6", "bike lock combo 2291")
    r"(?:pad|bike |cable |combination )?lock(?=\s*[:：])|(?:pad|bike |cable )?lock\s?(?:combo|combination)|"
    r"(?:开门|开锁|门锁|智能锁|密码锁|挂锁|保险箱|保险柜|密码箱)码|"
    # (and the lock itself named before a colon, as the English one is: 库房密码锁：603814)
    r"(?:门锁|智能锁|电子锁|密码锁|挂锁|保险箱|保险柜|密码箱)(?=\s*[:：])|"
    # a locker's or a parcel station's code (快递柜码, 取件码, locker code)
    r"(?:快递柜|储物柜|寄存柜|丰巢|柜子)\s*(?:码|密码)|取件码|提货码|(?:locker|parcel|pick-?up|collection)\s?(?:code|pin)|"
    # a code that proves who signs in: a 2FA backup or recovery code, a one-time or verification code (验证码, 备用码)
    r"(?:backup|recovery|2fa|mfa|two-factor|one-time|verification|otp|authenticator|sms)\s?codes?|(?<![a-z])otp|"
    r"验证码|备用码|恢复码|动态码|动态密码)"
    # (or the word code a few words on: "key safe by the side porch, code 2619")
    r"(?:[^\d\n.;,。，；]{0,40}?(?:\bis\b|:|：|是|为)|[^\d\n.;。；]{0,40}?\bcode\b\s*(?:is\b|:)?|"
    # (or a change said first, then the new one: 门禁密码今天改了，新的是739216; "gate code changed, new one is 4471")
    r"[^\d\n.;。；]{0,30}?(?:\bnew (?:one|code) is\b|新的?(?:是|为)|改成|换成|改为))?\s*[\"'“]?"
    # (digits one by one with hyphens, "5-8-0-2-then-#", are one code; so are groups of digits, "8841-2097")
    # (and a one-time code read out in two halves, "830 112")
    # (or spaced out as on the keypad, "7 3 0 5")
    r"(?P<secret>\d(?:-[\da-z#*]{1,5}){3,8}|\d{2,6}(?:-\d{2,6}){1,3}|\d{3} \d{3}(?![\d])|\d(?: \d){3,7}(?![\d])|"
    r"[\d#*]{3,10}|"
    r"[a-z]?\d{3,8}[a-z#*]?)(?![\da-z])"
)
# In a sentence that speaks of a code lock, a number after a door's or a gate's name is its code ("都是密码锁，单元门
# 5820，家门 139746", "keypad on both: side gate 4417, back door 0092"): the lock is the label, said once for both.
CODE_LOCK = re.compile(
    r"密码锁|密码门|电子锁|智能锁|门密码|keypad|key ?pad|code ?lock|combination lock|smart lock|door codes?"
)
SENTENCE = re.compile(r"[^。！？!?\n]+")
DOOR_NUMBER = re.compile(
    r"(?:[\u4e00-\u9fff]{0,3}门|\b(?:front|back|side|main|garden|garage|lobby|building|street)?\s?(?:door|gate))"
    r"\s*(?:码|code)?\s*(?:[:=]|是|为|\bis\b)?\s*(?P<secret>\d{4,8}[#*]?)(?![\d])"
)
# A user name and its password together after a login label: "server login is projroot / Kestrel!2219",
# "账号密码：admin01/Qw3rty!" (both go: the pair is the credential).
LOGIN_PAIR = re.compile(
    # (a key's last word too: portal_login)
    # (a whole word: not the name of an error, "NoCredentialsError: Unable to locate credentials")
    r"(?:(?<![a-z0-9])log ?in|(?<![a-z0-9])sign ?in|credentials?(?![a-z0-9_])|"
    r"账号密码|账号和密码|用户名和密码|用户名密码|登录账号|登录信息)"
    rf"\s*(?:is|are|:|是|为|with|using)?\s*(?P<secret>[a-z0-9._@-]{{2,40}}\s*[/:|]\s*{_SECRET_CHAR}{{4,64}}?)"
    rf"{SECRET_END}"
)
# The same pair after what one signs in to, a portal or an account ("council permit portal: office@grange.example /
# Tarmac!Skip2026", "后台账号：ops_li / Hq#2291a"): the caller takes it only when the part after the slash cannot be a
# word, so "portal: sales / marketing" stays.
ACCOUNT_PAIR = re.compile(
    # (and a shop's or a site's admin: "Shop admin: orders@blackthorn.example / Hedgerow!Still2291")
    r"(?:(?<![a-z0-9])(?:portal|account|acct|dashboard|admin panel|back ?office|console|admin(?![a-z0-9]))|"
    r"后台|账号|账户|帐号)"
    rf"\s*(?:[:：=]|是|为|\bis\b)\s*(?P<secret>[a-z0-9._@-]{{2,60}}\s*[/|]\s*(?P<password>{_SECRET_CHAR}{{6,64}}?))"
    rf"{SECRET_END}"
)
# A wireless network's name and its password after a slash, as handover notes and signs put them ("Wi-Fi:
# Silverfish_Guest / fixer-Bath-2291", "无线网：Cafe-5G / 88886666ab"): the part after the slash is the password.
WIFI_PAIR = re.compile(
    r"(?:(?<![a-z0-9])wi-?fi|(?<![a-z0-9])wlan|无线网络|无线网|无线|网络)\s*(?:[:：=]|是|为|is)\s*"
    rf"[^\s/|]{{2,40}}\s*[/|]\s*(?P<secret>{_SECRET_CHAR}{{4,64}}?){SECRET_END}"
)
# Signing in somewhere as a user with a password, no label before either ("I log into the box office as r.ames with
# Tr0ut!Spring and it …"): the user name and the password go together (a password-like value: 6+ characters with a
# digit or a symbol).
LOGIN_AS = re.compile(
    r"\b(?:log(?:ged|ging)? ?(?:in|on)|sign(?:ed|ing)? ?in)(?:\s?to)?\s+\S{1,80}\s+as\s+"
    r"(?P<secret>[a-z0-9._@-]{3,40}\s+(?:with|using|pw|password|pwd|and)\s+"
    rf"(?={_SECRET_CHAR}*[\d\W_]){_SECRET_CHAR}{{6,64}}?){SECRET_END}"
)
# A user name said just before its password ("my login is m.okafor.interp and password …", "用户名 zhangwei01 密码
# …"): the name goes too, the pair is the credential.
LOGIN_NAME = re.compile(
    r"(?:\blog ?in(?: name| id)?|\buser ?name|\buser ?id|\buser(?=\s*:?\s*[a-z0-9.-]*[\d_@])|"
    r"用户名|登录名|登录账号|账号)\s*(?:is|:|是|为)?\s*"
    r"(?P<secret>[a-z0-9._@-]{3,40}?)\s*(?:,|，|;|、|/|\||and|&|with|和|及|以及)?\s*(?:the\s+|my\s+|its\s+)?"
    # a password's own qualifier between them: "/ 初始密码", "and the temporary password"
    r"(?:initial\s+|temporary\s+|default\s+|one-time\s+|初始|临时|默认|初次)?"
    r"(?:password|passwd|pwd|pw\b|pass(?=\s*[:=])|密码|口令)"
)
# A remote-desktop tool's ID, with which a session password lets anyone in ("TeamViewer ID 482 119 306", 向日葵识别码,
# ToDesk 设备代码): a login, whatever the tool's name ("remote support: RemoteDesk ID …").
REMOTE_ACCESS_ID = re.compile(
    r"(?:teamviewer|anydesk|rustdesk|remote ?desk|remote[- ]support|remote[- ]access|todesk|向日葵|远程协助|远程)"
    r"[^\d\n]{0,20}?(?:\bid\b|识别码|设备代码|设备码|伙伴识别码)\s*(?:is|:|是|为)?\s*"
    r"(?P<secret>\d(?:[ -]?\d){6,11})(?!\d)"
)
# The holder's name after an account's label (户名陈志远, "account name: Jane Doe"); English names are matched on the
# text as written, capitalised.
ACCOUNT_HOLDER_ZH = re.compile(
    # (not 客户名单 or 用户名; not "户名是我自己" or 同业主)
    r"(?:(?<![客用])户名(?![单称])|开户名|开户人|收款人|收款户名)\s*(?:[:：]|是|为)?\s*"
    r"(?P<secret>(?!我|同|本人|是|为)[\u4e00-\u9fff]{2,4})(?![\u4e00-\u9fff])"
)
ACCOUNT_HOLDER_EN = re.compile(
    r"(?i:account (?:holder|name)|payee|beneficiary)(?:'s name)?\s*(?::|is)?\s*"
    r"(?P<secret>[A-Z][a-z'.-]+(?: [A-Z][a-z'.-]+){1,2})\b"
)
# (never across a line: an empty "ALIYUN_ACCESS_KEY_SECRET=" is not the next line's key)
KEY_SEPARATOR = r"[^\S\n]*(?:[:=]|是|为|is|was)[^\S\n]*[\"'“]?[^\S\n]*|[^\S\n]+"
KEY_LABEL = re.compile(
    r"(?<![a-z0-9_.-])(?P<label>[a-z0-9_.-]{0,40}?(?:api[_ -]?key|apikey|secret(?:[_-]?(?:access[_-]?)?key)?|"
    r"access[_ -]?key(?:[_ -]?(?:id|secret))?|private[_-]?key|client[_-]?secret|access[_-]?token|refresh[_-]?token|"
    r"auth[_-]?token|token|authorization|key)|密钥|秘钥|令牌|私钥)"
    # (a short note in brackets may follow the label: "API key (e-invoice upload): …")
    r"(?:[^\S\n]*[(（][^()（）\n]{1,40}[)）])?"
    rf"(?P<sep>{KEY_SEPARATOR})(?P<secret>[a-z0-9+/=_.~-]{{8,}})"
)
# A label that names a public key, or its id (apt's NO_PUBKEY): what follows was made to be shared.
PUBLIC_KEY_LABEL = re.compile(r"pub(?:lic)?[_ -]?key")
# The type that opens an SSH public key line (ssh-ed25519 AAAA…): what follows is public, meant to be shared.
PUBLIC_KEY_TYPE = re.compile(r"ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d+")
BEARER = re.compile(r"\bbearer\s+(?P<secret>[a-z0-9._~+/=-]{16,})")
JWT = re.compile(r"eyj[a-z0-9_-]{5,}\.eyj[a-z0-9_-]{5,}\.[a-z0-9_-]{10,}")
KEY_PREFIXES = re.compile(
    r"(?<![a-z0-9])(?P<secret>sk-(?:proj-|ant-|live-|test-|svcacct-)?[a-z0-9_-]{20,}|(?:akia|asia)[0-9a-z]{16}|"
    r"ltai[0-9a-z]{12,30}|gh[pousr]_[a-z0-9]{30,}|github_pat_[a-z0-9_]{30,}|xox[abprs]-[a-z0-9-]{10,}|"
    r"aiza[0-9a-z_-]{30,}|app-[a-z0-9]{20,}|dataset-[a-z0-9]{20,}|glpat-[a-z0-9_-]{20,}|hf_[a-z0-9]{30,}|"
    # (a live or test key under any short vendor prefix, with a digit in it: abk_live_7Qm2…)
    r"[a-z]{2,6}_(?:live|test|prod)_(?=[a-z0-9]*\d)[a-z0-9]{16,}|pcsk_[a-z0-9_]{30,}|npm_[a-z0-9]{30,}|pypi-[a-z0-9_-]{40,})"
    r"(?![a-z0-9])"
)
# scheme://user:password@host, the user may be empty (redis://:password@host). The password runs to the last "@"
# before a host (a bracketed IPv6 host too), so an unencoded "@", ":", "/" or a Chinese character inside it does not
# cut it short; it never crosses a space, a quote, a backtick or a Chinese full stop (a URL quoted in prose).
_URL_HOST = r"(?:\[[0-9a-f:.]+\]|[a-z0-9_-]+(?:\.[a-z0-9_-]+)*)"
URL_CREDENTIALS = re.compile(
    r"[a-z][a-z0-9+.-]{1,15}://[^\s:/@\"'`。、]{0,64}:(?P<secret>[^\s\"'`。、]{1,128})"
    rf"@{_URL_HOST}(?=[:/?#\s,;.。、)\]\"'`>]|$|[\u4e00-\u9fff])"
)
# Password=…; / Pwd=…; / &password=… in ADO.NET, ODBC, JDBC and libpq strings: the value runs to the ";" or "&"
# that ends the field ({…} braced in ODBC; in libpq's "password=… dbname=…" to the space before the next key), so a
# password in any script or with symbols goes whole.
CONNECTION_PASSWORD = re.compile(
    r"(?<![a-z0-9_])(?:password|passwd|pwd)\s*=\s*(?P<secret>\{[^}]{1,128}\}|[^;&\s\"'`]{1,128}(?=[;&]|$)|"
    r"[^;&\s\"'`]{1,128}(?=\s+[a-z_]+\s*=)|[^;&\s\"'`\u4e00-\u9fff]{1,128})"
)
# A certificate is public (it is served to every client): its base64 body is no key.
CERTIFICATE = re.compile(
    r"-----begin [a-z0-9 ]{0,20}certificate-----[\s\S]*?(?:-----end [a-z0-9 ]{0,20}certificate-----|$)"
)
PRIVATE_KEY = re.compile(
    r"-----begin (?P<what>[a-z0-9 ]{0,20}?)private key(?: block)?-----[\s\S]*?"
    r"(?:-----end (?P=what)private key(?: block)?-----|(?=[^a-z0-9+/=\s])|$)"
)
# Not secrets: documentation's stand-ins (YOUR_API_KEY, sk-xxxx, <token>, ${TOKEN}, ****, changeme).
# (a value that is its own label's name, postgresql://USER:PASSWORD@HOST, stands for one)
PLACEHOLDER = re.compile(
    r"^[<{\[$%(]|[>}\]]$|x{4,}|\*{3,}|\.{3,}|^your[_-]?|[_-]your[_-]|[_-]here$|^(?:an?[_-]?)?example|"
    r"placeholder|replace[_-]?me|"
    r"changeme|dummy|redacted|^(?:(.)\1+)$|^(?:test|sample|fake|demo|foo|bar)[_-]?(?:key|token|secret|password)?$|"
    r"^(?:password|passwd|pwd|pass|secret|token|api[_-]?key)$"
)

# ---------------------------------------------------------------------------------------- personal details
# Month names in the languages of the Latin-script forms people fill in (English, French, German, Spanish, Italian,
# Dutch, Portuguese, Polish in the genitive): "3 mai 1990", "15 de marzo de 1990", "12 marca 1988".
_MONTH = (
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?|janvier|février|avril|mai|juin|juillet|août|"
    r"septembre|octobre|novembre|décembre|januar|februar|märz|oktober|dezember|enero|febrero|marzo|abril|mayo|junio|"
    r"julio|agosto|septiembre|octubre|noviembre|diciembre|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|"
    r"ottobre|dicembre|januari|februari|maart|mei|juni|juli|augustus|janeiro|fevereiro|março|maio|junho|julho|"
    r"setembro|outubro|novembro|dezembro|stycznia|lutego|marca|kwietnia|maja|czerwca|lipca|sierpnia|września|"
    r"października|listopada|grudnia"
)
# A day in English: a number (7, 7th) or an ordinal in words (the twelfth, twenty-first).
_ORDINAL_WORD = (
    r"(?:twenty|thirty)?[- ]?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|tenth|eleventh|twelfth|"
    r"thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth"
)
_DAY_EN = rf"(?:\d{{1,2}}(?:st|nd|rd|th)?|{_ORDINAL_WORD})"
# A year as digits, as an apostrophe and two digits ('85), or in words (nineteen forty-one, two thousand and five).
_UNITS_WORD = r"one|two|three|four|five|six|seven|eight|nine"
_TENS_WORD = rf"(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[- ](?:{_UNITS_WORD}))?"
_TEENS_WORD = r"ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_YEAR_EN = (
    rf"(?:(?:19|20)\d{{2}}|['’]\d{{2}}(?!\d)|(?:nineteen|twenty)[- ](?:hundred|oh[- ](?:{_UNITS_WORD})|{_TEENS_WORD}|"
    rf"{_TENS_WORD})|two thousand(?:(?: and)? (?:{_TEENS_WORD}|{_TENS_WORD}|{_UNITS_WORD}))?)"
)
# A Chinese date in Chinese numerals or digits, the year in four or two figures (一九九〇年, 九一年, 91年), the month
# and the day of the lunar calendar too (腊月廿三, 正月初八), as people write a birthday.
_ZH_FIGURE = r"[一二三四五六七八九零〇]"
_ZH_DATE = (
    # (an era year too: 昭和12年, 平成3年, 民国80年)
    # (the lunar calendar named after the year: 1958年农历八月十五; the Republic's era as Taiwan writes it, 民國108年)
    rf"(?:{_ZH_FIGURE}{{4}}|{_ZH_FIGURE}{{2}}|(?:19|20)\d{{2}}|(?:昭和|平成|令和|大正)\s*(?:\d{{1,2}}|元)|"
    r"(?:民国|民國)\s*(?:\d{1,3}|元))\s*年\s*(?:农历|阴历|農曆|陰曆)?\s*"
    r"(?:[一二三四五六七八九十]{1,3}|正|腊|冬|\d{1,2})\s*月\s*"
    r"(?:初[一二三四五六七八九十]|廿[一二三四五六七八九]?|卅|[一二三四五六七八九十]{1,3}|\d{1,2})(?:\s*[日号])?"
)
_MONTH_ABBREVIATION = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_DATE = (
    r"(?:(?:19|20)\d{2}\s*(?:年|[-/.])\s*\d{1,2}\s*(?:月|[-/.])\s*\d{1,2}(?:\s*[日号])?|\d{1,2}[-/.]\d{1,2}[-/.](?:19|20)\d{2}|"
    rf"(?:the\s+)?{_DAY_EN}\s+(?:(?:of|de|del)\s+)?(?:{_MONTH}),?\s+(?:(?:de|del)\s+)?{_YEAR_EN}|"
    rf"(?:{_MONTH})\s+(?:the\s+)?{_DAY_EN},?\s+{_YEAR_EN}|"
    # a day people name, and the year: Christmas Eve 1949, New Year's Day 1950
    r"(?:christmas(?: eve| day)?|new year'?s(?: eve| day)?|valentine'?s day|halloween|boxing day|"
    rf"independence day|thanksgiving(?: day)?)(?:,?\s+(?:of\s+)?){_YEAR_EN}|"
    # as forms and passports print it: 05-mar-1990, 05/mar/90
    rf"\d{{1,2}}[-/](?:{_MONTH_ABBREVIATION})[a-z]*[-/](?:19|20)?\d{{2}}(?!\d)|"
    # and the month first, as some forms ask (mon-dd-yyyy): mar-08-2010
    rf"(?:{_MONTH_ABBREVIATION})[a-z]*[-/]\d{{1,2}}[-/](?:19|20)\d{{2}}(?!\d)|"
    # Korean: 1990년 3월 12일
    r"(?:19|20)\d{2}\s*년\s*\d{1,2}\s*월\s*\d{1,2}\s*일|"
    rf"{_ZH_DATE})"
)
# After a birth label a month and year is a date of birth too (出生年月：1990.03), and so is a compact 19900315, a
# Chinese date with a two-digit year (96年10月3号) and a day, month and two-digit year (DOB 03/07/85).
# A year of birth: 1900-2015 where nothing but a name says it is a birth; after a birth label any year of this
# century so far too (a child's: "ipinanganak noong Hunyo 4, 2025").
_BIRTH_YEAR = r"(?:19\d{2}|200\d|201[0-5])(?!\d)"
_LABELLED_BIRTH_YEAR = r"(?:19\d{2}|20[0-2]\d)(?!\d)"
_ZH_SHORT_YEAR_DATE = r"\d{2}\s*年\s*\d{1,2}\s*月\s*\d{1,2}(?:\s*[日号])?"
# Korean with a two-digit year (85년 3월 2일), a date of birth before 생 (born)
_KO_SHORT_YEAR_DATE = r"\d{2}\s*년\s*\d{1,2}\s*월\s*\d{1,2}\s*일"
_BIRTH_VALUE = (
    rf"{_DATE}|{_ZH_SHORT_YEAR_DATE}|\d{{1,2}}[-/.]\d{{1,2}}[-/.]\d{{2}}(?!\d)|(?:19|20)\d{{2}}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])|"
    r"(?:19|20)\d{2}\s*(?:年|[-/.])\s*\d{1,2}\s*月?|"
    # the month as a word of any language, in the three orders (28 februarie 1964, Hunyo 4, 2025, 2009. május 14.),
    # or in Roman numerals (12.iv.1979)
    rf"\d{{1,2}}\.?\s+(?:de\s+)?[^\W\d_]{{3,12}}\.?,?\s+(?:de\s+)?{_LABELLED_BIRTH_YEAR}|"
    rf"[^\W\d_]{{3,12}}\.?\s+\d{{1,2}},?\s+{_LABELLED_BIRTH_YEAR}|"
    # (Latvian and Lithuanian name the year and the day: 1984. gada 2. maijs, 1984 m. gegužės 2 d.)
    rf"{_LABELLED_BIRTH_YEAR}\.\s+gada\s+\d{{1,2}}\.\s+[^\W\d_]{{3,12}}|"
    rf"{_LABELLED_BIRTH_YEAR}\s+m\.\s+[^\W\d_]{{3,12}}\s+\d{{1,2}}\s+d\.|"
    rf"{_LABELLED_BIRTH_YEAR}\.?\s+[^\W\d_]{{3,12}}\.?\s+\d{{1,2}}(?:\.(?![\d\w]))?(?!\d)|"
    rf"\d{{1,2}}\.\s?(?:i{{1,3}}|iv|vi{{0,3}}|ix|xi{{0,2}})\.\s?{_LABELLED_BIRTH_YEAR}|"
    # day, month and year with a space after each dot, as Central Europe and the Balkans write it (30. 5. 1987)
    rf"\d{{1,2}}\.\s\d{{1,2}}\.\s?{_LABELLED_BIRTH_YEAR}"
)
BIRTH_DATE = re.compile(
    r"(?:出生日期|出生年月日|出生年月|出生于|出生|生日|生于|生年月日|생년월일|date of birth|birth ?date|birthday|"
    r"born(?: on)?|\bb\.|d\.?o\.?b\.?|né(?:e)? le|date de naissance|geboren?(?: am)?|geb\.|geburtsdatum|"
    r"fecha de nac(?:imiento|\.)|nacid[oa](?: el)?|nascid[oa](?: a| em)?|"
    r"data di nascita|nat[oa] il|data de nascimento|geboortedatum|geboren op|"
    r"data urodzenia|urodzon[ya]|дата рождения|"
    # (the verb of the past, as a parent writes of a child or a father: "nasceu a 14-02-1949", "nació el …", "nacque
    # il …", "urodził się …")
    r"nasceu(?: a| em| no dia)?|naci[oó](?: el)?|nacque(?: il)?|naquit(?: le)?|va néixer(?: el)?|"
    r"urodził[a]? się|narodil[a]? se|werd geboren(?: op)?|"
    r"fødselsdato|födelsedatum|syntymäaika|doğum tarihi|"
    # Catalan, Swedish, Danish, Norwegian, Finnish (s. = syntynyt on a form line), Czech, Hungarian
    r"nascud?[ta](?: el)?|född(?: den)?|født(?: den)?|syntynyt|(?:^|\n)\s*s\.|narozen[aá]?|született|"
    # Ukrainian; and the genealogists' birth sign before a date (*12.05.1994)
    r"дата народження|народил(?:ся|ась)|(?<![\w*])\*(?=\s?\d{1,2}[./])|"
    # the word for born, or a form's label for the date, in the other languages people fill forms in: Hungarian,
    # Polish and Czech abbreviations, Russian, Romanian, the South Slavic languages, Slovak, Bulgarian, Greek, the
    # Baltic languages, Icelandic, Vietnamese, Indonesian and Malay, Tagalog, Swahili, Turkish, Arabic, Hebrew, Hindi,
    # Thai and Japanese
    r"szül\.|(?<!\w)ur\.|(?<!\w)nar\.|родил(?:ся|ась)|д\.\s?р\.|născut[ăa]?(?: la| pe)?|data nașterii|"
    r"rođen[a]?|datum rođenja|рођен[а]?|датум рођења|roden[a]?|narodený|narodená|dátum narodenia|rojen[a]?|"
    r"datum rojstva|"
    r"роден[а]?|дата на раждане|γεννήθηκε|ημερομηνία γέννησης|sündinud|sünniaeg|dzimis|dzimusi|"
    r"dzimšanas datums|gimęs|gimusi|gimimo data|fædd(?:ur)?|fæðingardagur|ngày sinh|sinh ngày|"
    r"tanggal lahir|tgl\.? lahir|tarikh lahir|lahir(?: pada| tanggal)?|ipinanganak(?: noong| sa)?|kapanganakan|"
    r"alizaliwa(?: tarehe)?|tarehe ya kuzaliwa|doğumlu|تاريخ الميلاد|تاريخ الولادة|נולד(?:ה)?|תאריך לידה|"
    r"जन्म तिथि|जन्मतिथि|วันเกิด|เกิดวันที่|生年月日|"
    # the place between: "born in Cork on 3 May 1990"
    r"born in [a-z .'-]{2,30}? on)"
    # a few words may come between ("birthday 填的是 19990731", "DOB on file: …"), within the clause
    rf"(?:\s*(?:是|为|:|is|on|am|el|il|le)?\s*|[^\d\n.。,，;；!?！？]{{1,8}}?)(?P<value>{_BIRTH_VALUE})|"
    rf"(?P<before>{_DATE}|(?<!\d){_ZH_SHORT_YEAR_DATE}|(?<!\d){_KO_SHORT_YEAR_DATE})"
    # (the hour of the birth, as a child's name is chosen by it, and the place after it may come between:
    # 2024年11月3日早上6点12分在温州出生; a place alone not: a zoo's cub born 在园里 on a date is no one's birthday)
    r"\s*(?:[早上中下晚午凌晨夜里]{0,3}\s*\d{1,2}\s*[点點时時:：]\s*(?:\d{1,2}\s*分?|半)?\s*"
    r"(?:在[\u4e00-\u9fff]{1,8}?)?)?(?:出生|生(?![产成效活意气])|생|"
    # (or a word for born after the date, as German, Finnish, Turkish and Japanese put it: am 18.04.2016 geboren)
    r"\s(?:geboren|syntynyt|doğdu|生まれ))|"
    # (or the part of the day alone, before the word for birth itself: 2020年9月1日凌晨出生的)
    # (or a date with its month as a word of any language, or in dotted figures, then the word for born after it, as
    # German and Dutch put it: "ist am 3. März 2013 geboren", "is op 9 mei 2011 geboren")
    rf"(?P<before_word>\d{{1,2}}\.?\s+[^\W\d_]{{3,12}}\.?\s+{_LABELLED_BIRTH_YEAR}|"
    rf"\d{{1,2}}\.\s?\d{{1,2}}\.\s?{_LABELLED_BIRTH_YEAR})\s+(?:geboren|syntynyt|doğdu)\b|"
    rf"(?P<before_daypart>{_DATE}|(?<!\d){_ZH_SHORT_YEAR_DATE})\s*(?:早上|上午|中午|下午|傍晚|晚上|凌晨|半夜|夜里|清晨|深夜)\s*出生|"
    # a year and a day named in words before 出生: 2001年元旦出生, 1990年出生
    r"(?P<year_before>(?:19|20)\d{2}\s*年[\u4e00-\u9fff]{0,4}?)\s*出生"
)
# A date of birth after a birth label further on in the same sentence: a form's field named, then what the user typed
# into it (系统让填“出生年月日（8位数字）”，我填的19560208; "Date of Birth 那栏要求 Mon-DD-YYYY，…填的是 Mar-08-2010").
# A whole date with a year of birth (compact, numeric or with the month's name) is nothing else beside such a label.
_WHOLE_BIRTH_DATE = (
    rf"(?:19\d{{2}}|20[0-2]\d)(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])|"
    rf"{_LABELLED_BIRTH_YEAR}[-/.]\d{{1,2}}[-/.]\d{{1,2}}(?!\d)|\d{{1,2}}[-/.]\d{{1,2}}[-/.]{_LABELLED_BIRTH_YEAR}|"
    rf"(?:{_MONTH_ABBREVIATION})[a-z]*[-/ ]\d{{1,2}},?[-/ ]{_LABELLED_BIRTH_YEAR}|"
    rf"\d{{1,2}}[-/ ](?:{_MONTH_ABBREVIATION})[a-z]*[-/ ]{_LABELLED_BIRTH_YEAR}|"
    # (in the boxes of a form, a space between: "Date of birth 那栏分 DD MM YYYY 三格，我填的 …")
    rf"\d{{1,2}} \d{{1,2}} {_LABELLED_BIRTH_YEAR}|{_LABELLED_BIRTH_YEAR} \d{{1,2}} \d{{1,2}}(?!\d)"
)
BIRTH_DATE_AFTER_LABEL = re.compile(
    r"(?:出生日期|出生年月日|出生年月|生日|date of birth|birth ?date|birthday|d\.?o\.?b\.?)[^。.!?！？\n]{0,60}?"
    rf"(?<![\da-z])(?P<value>{_WHOLE_BIRTH_DATE}|"
    # a date written with 年月日 whose year is one of birth (a birthday party's date is this year's or next):
    # "孩子的生日我填错了，…正确的是2014年11月30日"
    rf"{_BIRTH_YEAR}\s*年\s*\d{{1,2}}\s*月\s*\d{{1,2}}\s*[日号])"
)
# A whole date with a year of birth (1900-2015: never an event of this year or next) after a label for the date of
# birth further back in the message, across a sentence: the form's field named, then what the document shows ("DS-160
# 的 Date of Birth 分成 Day、Month、Year 三个下拉框。我老婆 … 护照上印的是 14 JUN 1993").
BIRTH_LABEL_THEN_OLD_DATE = re.compile(
    r"(?:出生日期|出生年月日|date of birth|birth ?date|d\.?o\.?b\.?)[^\n]{0,200}?"
    rf"(?<![\da-z])(?P<value>(?:19\d{{2}}|200\d|201[0-5])(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])|"
    rf"{_BIRTH_YEAR}[-/.]\d{{1,2}}[-/.]\d{{1,2}}(?!\d)|\d{{1,2}}[-/.]\d{{1,2}}[-/.]{_BIRTH_YEAR}|"
    rf"(?:{_MONTH_ABBREVIATION})[a-z]*[-/ ]\d{{1,2}},?[-/ ]{_BIRTH_YEAR}|"
    rf"\d{{1,2}}[-/ ](?:{_MONTH_ABBREVIATION})[a-z]*[-/ ]{_BIRTH_YEAR})"
)
# The same after a form's field for the date of birth (not 生日: a birthday party has a date too), the date written
# with 年月日, its year in figures or of a Japanese era, as Japanese forms ask (“生年月日”一栏…我填的是 令和3年6月2日).
BIRTH_FIELD_THEN_DATE = re.compile(
    r"(?:出生日期|出生年月日|生年月日|생년월일)[^。.!?！？\n]{0,60}?"
    rf"(?P<value>(?:{_LABELLED_BIRTH_YEAR}|(?:昭和|平成|令和)\s*(?:\d{{1,2}}|元))\s*年\s*\d{{1,2}}\s*月\s*\d{{1,2}}\s*[日号])"
)
# A person's name, a comma, at most two words, then a date with a year of birth (1900-2015): "Szabó Eszter, született
# 1984. május 6.", "Aino Rautio, syntynyt 8.12.1953", "Amani Mwakyusa, alizaliwa tarehe 12 Machi 1990". A sign-up
# names the person and then their birth, in whatever language its label is: the shape holds where no label list
# does. Read on the text with its case: a name is capitalised, the words between are not (no weekday, no place
# ending a sentence: "Hammersmith Odeon, Saturday 12 March 1983"); the month may be a word of any language.
_NAME_PARTICLE = r"(?:de|van|von|der|den|da|di|du|del|dos|le|la|bin|binti|al)"
_NAME_WORD = r"[A-ZÀ-ÖØ-ÞĀ-Ž][a-zß-öø-ÿā-ž'’-]+"
NAME_THEN_BIRTH = re.compile(
    rf"(?<![\w,])(?:{_NAME_WORD}\s+){{1,3}}{_NAME_WORD},\s+(?:[a-zß-öø-ÿā-ž]{{2,12}}\.?:?\s+){{1,2}}"
    rf"(?P<value>\d{{1,2}}\.\s?\d{{1,2}}\.\s?{_BIRTH_YEAR}|\d{{1,2}}[/-]\d{{1,2}}[/-]{_BIRTH_YEAR}|"
    rf"\d{{1,2}}\.?\s+[^\W\d_]{{3,12}}\.?,?\s+{_BIRTH_YEAR}|{_BIRTH_YEAR}\.?\s+[^\W\d_]{{3,12}}\s+\d{{1,2}}\.?|"
    rf"{_BIRTH_YEAR}-\d{{2}}-\d{{2}})"
)
# A date of birth in brackets right after a person's name, as a guest list or a class list writes it ("Tomasz Nowak
# (14/02/1987)", 孩子叫陈可欣（2016.09.21）), or after a sex in a form's order of name, sex, birth (王小明，男，
# 1988年3月12日). Read on the text with its case; the year is a year of birth (1900-2015).
_NUMERIC_BIRTH = (
    rf"\d{{1,2}}[./-]\d{{1,2}}[./-]{_BIRTH_YEAR}|{_BIRTH_YEAR}[./-]\d{{1,2}}[./-]\d{{1,2}}|"
    rf"{_BIRTH_YEAR}\s*年\s*\d{{1,2}}\s*月\s*\d{{1,2}}(?:\s*[日号])?"
)
BRACKETED_BIRTH = re.compile(
    rf"(?:(?<![\w,])(?:{_NAME_WORD}\s+){{1,3}}{_NAME_WORD}\s*\(|(?:叫|名叫|姓名[:：]?\s*)[\u4e00-\u9fff]{{2,4}}\s*[(（])"
    rf"\s*(?P<value>{_NUMERIC_BIRTH})\s*[)）]"
)
SEX_THEN_BIRTH = re.compile(rf"[\u4e00-\u9fff]{{2,4}}[，,、\s]+[男女][，,、\s]+(?P<value>{_NUMERIC_BIRTH})")
# After a colon, a person's name, a comma, then an address in any country's order: a house number and a postcode
# among at least two parts ("bezorgen bij: Y. Bakker, Van Speijkstraat 88-2hoog, 1057 HB Amsterdam", "dikirim ke: Rina
# Marlina, Jl. Kenanga No. 17, RT 04/RW 09, Kota Bogor 16142"). An order names its recipient and then where they
# live, whatever the language of the label; read on the text with its case. A postcode is four to six digits (not a
# date's year: 02.11.2026), 1057 HB, an Eircode (Y34 KX72) or a British one (LS1 4AB).
_POSTCODE_ANY = (
    r"(?:(?<![./:-])\b\d{4,6}\b(?![./:-]\d)"
    r"|\b\d{4}\s?[A-Z]{2}\b|\b[A-Z]\d{2}\s?[A-Z\d]{4}\b|\b[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}\b)"
)
NAME_THEN_ADDRESS = re.compile(
    rf"[:：]\s*(?P<name>(?:(?:[A-Z]\.\s?)+|{_NAME_WORD}\s+)(?:(?:{_NAME_WORD}|{_NAME_PARTICLE})\s+){{0,3}}{_NAME_WORD}),\s+"
    # the first part with its house number, then the parts up to the postcode, then the town and region after it
    r"(?P<value>[^\n,]{0,40}?\d[^\n,]{0,40},[^\n]{0,100}?"
    + _POSTCODE_ANY
    + r"(?:\s+[A-Z][\w'’-]+){0,3}(?:,\s*[A-Z][^\n,.\d]{1,30}\.?){0,2})"
)
_HAN = r"[\u4e00-\u9fff]"
# A character of a place name: not one of the words that come before an address (是, 在, 住, 寄到, 地址, 我的 …), so a
# region does not swallow its label ("我家地址是广东省…" starts at 广东省).
# (the rarer characters of place names too, outside the basic block once simplified: 禾輋 folds to 禾𪨶)
_PLACE = r"(?:(?![是为在住的寄到址我你他她])[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0003134f])"
# The administrative levels above a street: province, then city or prefecture (市, 州, 盟, 地区), then district or
# county (区, 县, 旗, 市), then town (镇, 乡, 街道).
# (a space may part the levels, as people type them: "福建 泉州 晋江 金井镇 溪埕村"; or a comma, or a line break, as a
# form's fields are pasted: "江西省，赣州市，章贡区，…")
_ZH_GAP = r"(?:\s?|\s*[,，、]\s*)"
_CHINESE_REGION = (
    rf"(?:{_PLACE}{{2,8}}(?:省|自治区){_ZH_GAP})?(?:{_PLACE}{{1,8}}(?:市|州|盟|地区){_ZH_GAP})?"
    rf"(?:{_PLACE}{{1,8}}(?:区|县|旗|市){_ZH_GAP})?(?:{_PLACE}{{1,8}}(?:镇|乡|街道){_ZH_GAP})?"
)
# Right after an estate's name (…花苑, …湾) or its lettered zone (…B区): where dashed units may start (紫金花苑7-2-301,
# 金域蓝湾B区8-2-3).
_AFTER_AN_ESTATE = r"(?:(?<=[园苑城邸府湾居庄坊墅期])|(?<=[a-z\d]区))"
# Below the house number: a courtyard (2号院) or an estate's name (168号金地花苑3幢), building, entrance, floor, then
# the room (室, 房, 户, 号 or 之 after a floor: 6楼12号, 12楼之3, or a number after the entrance or the building:
# 2单元706, 3栋405).
_CHINESE_UNITS = (
    # (the estate's name may stand apart, in one or two parts, with a zone before the block:
    # "459号 麓谷小镇 D区 9栋1003")
    # (a courtyard's inner house: 63号院内2号)
    rf"(?P<unit>(?:\s*院(?:内\s*\d{{1,4}}\s*号)?|\s*{_PLACE}{{1,10}}(?:\s+{_PLACE}{{1,6}})?(?=(?:\s*[a-z\d]{{1,2}}区)?\s*(?:"
    r"[a-z\d一二三四五六七八九十]{1,5}\s*(?:栋|幢|号楼|座|单元|门|排|(?:楼|层)\s*[a-z\d]{1,5}\s*(?:室|房|户))|"
    rf"{_AFTER_AN_ESTATE}\d{{1,3}}-\d{{1,4}}(?!\d))))?(?:\s*[a-z\d]{{1,2}}区(?=\s*[a-z\d]))?"
    # (门 is an entrance where the north-east numbers them: 37号2门502; 排, a row of a compound's houses: 3排2号)
    r"(?:\s*[a-z\d]{1,5}\s*(?:栋|幢|号楼|座|单元|门|排|楼|层))*(?:\s*[a-z\d]{1,5}\s*(?:室|房|户))?"
    # (the rooms of a Shanghai lane house: 后厢房, 亭子间, 客堂间)
    r"(?:(?<=号)(?:[前后东西]?厢房|亭子间|客堂间|前楼|后楼))?"
    # (after an entrance a bare number is the room: 2单元706; a building, entrance and room in dashes: 14-3, 7-2-301)
    r"(?:(?<=[楼层])\s*(?:\d{1,5}\s*号|之\s*\d{1,3})|(?<=单元|\d门)\s*\d{1,5}|(?<=[栋幢座])\s*\d{3,5}(?!\d)|"
    rf"(?<=排)\s*\d{{1,3}}\s*号|{_AFTER_AN_ESTATE}\d{{1,3}}-\d{{1,4}}(?:-\d{{1,4}})?(?![\d-]|\s*[层楼点时号])|"
    # (a floor and a flat in a dash right after the house number, as Chongqing writes it: 16号4-3, 附5号2-1)
    r"(?<=号)\d{1,3}-\d{1,4}(?![\d-]|\s*[层楼点时号]))?)"
)
# A postcode written right after an address goes with it: "…22号后厢房，邮编200021".
_ZH_POSTCODE = r"\s*[,，]?\s*(?:邮编|邮政编码)\s*[:：]?\s*\d{6}(?!\d)"
_ZH_POSTCODE_AFTER = rf"(?:{_ZH_POSTCODE})?"
CHINESE_ADDRESS = re.compile(
    rf"{_CHINESE_REGION}"
    # (道 names roads in Hong Kong and Tianjin: 弥敦道, 南京道)
    # (Beijing's numbered hutongs are 条: 东四十二条, 北新桥三条)
    rf"(?:(?:{_PLACE}|\d){{1,12}}(?:路|街|大道|大街|道|巷|胡同|弄|里)|{_PLACE}{{1,8}}[一二三四五六七八九十头]条)"
    # a road's part (江南大道中, 人民路北段, 二段), a lane and an alley off it (216巷8弄), and a house's sub-number
    # (168号之三)
    r"(?:\s?[东南西北中]{1,2}段?|\s?[一二三四五六七八九十\d]{1,2}段)?"
    # (甲19号, 乙3号: a number shared by neighbouring plots, as Beijing writes it)
    rf"\s*(?:\d{{1,5}}\s*巷\s*)?[甲乙丙丁]?\d{{1,5}}\s*(?:弄\s*\d{{1,5}}\s*)?号(?:之\s*(?:[一二三四五六七八九十]{{1,3}}|\d{{1,3}}))?"
    rf"{_CHINESE_UNITS}{_ZH_POSTCODE_AFTER}"
)
# A home in a residential estate or a village, with no street and house number: the estate (小区, 花园, 苑, 公寓,
# 新村, 村 …) and the building, entrance, group or room (3号楼2单元501室, 12栋, 3组15号). A floor alone (大厦12层)
# is an office's and stays.
CHINESE_ESTATE = re.compile(
    rf"{_CHINESE_REGION}"
    # (邨: a Hong Kong housing estate; the road it stands on may come first, parted as the levels are:
    # "…文昌中路，琼花里小区，9幢，1102室")
    rf"(?:(?:(?:{_PLACE}|\d){{1,12}}(?:路|街|大道|大街|巷){_ZH_GAP})?"
    rf"{_PLACE}{{1,12}}(?:小区|花园|家园|园|公寓|苑|新村|村|邨|社区|里|庭|府|湾|城|居|邸|庄|坊|墅)|"
    # (or an estate of any name on the road it stands on, its block numbered after it: 海甸五西路椰风水岸3期11栋)
    rf"(?:{_PLACE}|\d){{1,12}}(?:路|街|大道|大街|巷){_ZH_GAP}{_PLACE}{{2,10}}?"
    # (the block in Chinese numerals too, as people write it out: 信江丽景三栋二单元十四楼一号)
    rf"(?=(?:\s*[a-z\d一二三四五六七八九十]{{1,4}}\s*(?:期|区))?{_ZH_GAP}"
    # (written out, only with an entrance or a floor after it: "三栋楼都停电了" counts buildings)
    r"(?:[a-z\d]{1,5}\s*(?:栋|幢|号楼|座)|[一二三四五六七八九十]{1,4}\s*(?:栋|幢)"
    r"(?=\s*[一二三四五六七八九十\d]{1,3}\s*(?:单元|楼|层)))))"
    r"(?:\s*[a-z\d一二三四五六七八九十]{1,4}\s*(?:期|区))?"
    rf"(?P<unit>(?:{_ZH_GAP}\s*[a-z\d一二三四五六七八九十]{{1,5}}\s*(?:栋|幢|号楼|座|单元|组))+"
    # (then the floor and the flat, in figures or written out: 1402室, 十四楼一号)
    rf"(?:{_ZH_GAP}\s*(?:[a-z\d]{{1,5}}\s*(?:室|号|房|户)?|"
    r"[一二三四五六七八九十]{1,3}\s*(?:楼|层)\s*[一二三四五六七八九十零〇\d]{1,4}\s*(?:室|号|房|户)))?|"
    # a building, entrance and room in dashes, as the north writes them (紫金花园7-2-301)
    r"\s*\d{1,3}-\d{1,2}-\d{3,4}(?![\d-])|"
    # a block named, not numbered, then its floor and flat (翠峰邨朗云楼18楼1807室)
    # (or the flat alone, its floor in its number, as Hong Kong writes it: 丰顺楼2314室)
    rf"{_PLACE}{{1,4}}(?:楼|阁|座)\s*(?:\d{{1,3}}\s*(?:楼|层)\s*)?\d{{1,5}}\s*(?:室|号|房))"
    # (its postcode after it, with 邮编 or alone after a space: …2003房 570203)
    rf"(?:{_ZH_POSTCODE}|\s+\d{{6}}(?!\d))?"
)
# What may come after a space inside a Chinese address as typed: a Chinese character, a number, or a block's letter
# (b座).
_TYPED_PART = r"(?:[\u4e00-\u9fff\d]|[a-z][\d座栋幢区-])"
# After a label that only a person's address has (家庭住址, 收货地址, 寄给我), the address as written, from its region
# to the clause's end, when it has a number: the grammar above need not know every level (盟/旗/嘎查, 附3号21-4, an
# industrial park's dormitory). After a bare 地址 (no organisation's name right before it) only with a room
# (HOME_UNIT): "…营业时间…，地址杭州市…259号一楼" is a shop's.
CHINESE_LABELLED_ADDRESS = re.compile(
    r"(?:(?:家庭|现|居住|收货|收件|通讯|邮寄|联系|户籍|新)?住址|(?:家庭|现|居住|收货|收件|通讯|邮寄|户籍|我的|我家|家)地址|"
    # (a home visit's: 上门地址, 上门的话地址是)
    r"(?P<bare>(?<![\u4e00-\u9fff])地址)|家住|住在|寄给我|寄到我|寄回给我|送到我|上门[\u4e00-\u9fff]{0,4}?地址|"
    # a parcel or a visit to someone's home: 寄到我舅舅家, 送到她家
    r"(?:寄|送|邮|发)(?:到|给|回|去)[\u4e00-\u9fff]{0,6}?家|"
    # (in English, as Chinese users mix them: "postcard 以后寄 new address：重庆市…"; read as a bare 地址)
    r"(?P<english>(?<![a-z])(?:(?:new|home|my|our|delivery|shipping|mailing) )?address(?: is)?))"
    # (地址：, 地址是, and both: 地址是：)
    r"\s*(?:是|为|在)?\s*[:：]?\s*"
    # (a space may part the levels and the estate from its building, as people type them: "金开大道 棕榈泉 9栋 17-3")
    rf"(?P<value>[\u4e00-\u9fff]{{2,8}}(?:省|自治区|市|盟|州|区|县|旗)"
    rf"(?:[\u4e00-\u9fffa-z\d#()（）-]| (?={_TYPED_PART})){{3,50}}?)"
    rf"(?=[，。；;,、！!？?\n]|\s(?!{_TYPED_PART})|$)"
)
# A part of a Chinese address typed after a space (a number, a building's or a village's word): what is not one, "…5号
# 谢谢", is the sentence's.
CHINESE_ADDRESS_PART = re.compile(r"[\d号室栋幢楼层组队户座元村屯寨查]")
# Below a Chinese house number: a building, a floor, a room, a village's group, a lane (栋, 单元, 室, 三组, 弄, 附3号,
# 16号4-3). The learned finder's Chinese spans need one, or a home's or a recipient's word, as the rules do.
CHINESE_UNIT_BELOW_HOUSE = re.compile(r"[栋幢座楼层室户组队弄]|单元|附\s*\d|\d\s*-\s*\d|\d\s*门")
HOME_UNIT = re.compile(r"[室房户]|单元|\d\s*[-－]\s*\d+$|\d门\d+$")
# A village house: the county or town above it, the village (村, 村委会 and the hamlet under it), perhaps its group
# (三组), then the house number (下山口村46号). A village's house numbers are homes.
CHINESE_VILLAGE = re.compile(
    rf"{_CHINESE_REGION}(?:(?<=[县旗镇乡道市])|(?<=[县旗镇乡道市]\s))(?:{_PLACE}{{1,8}}村(?:委会)?){{1,2}}"
    # (a group numbered or named: 3组, 上寨小组, 二坊; or the hamlet under the village, named: 溪埕村 后厝 58号)
    r"(?P<unit>(?:\s*[\d一二三四五六七八九十]{1,3}\s*(?:组|队|社|坊)|"
    + _PLACE
    + r"{1,4}小组|\s?"
    + _PLACE
    + r"{1,4}(?=\s*\d))?\s*\d{1,5}\s*号(?!楼)"
    # (and a room in the house: 新围村二坊9号402房, 八坊28号602)
    r"(?:\s*\d{1,5}(?:\s*[室房户])?(?![\d.:：-]))?)"
)
# What makes an address someone's: a room or unit, or a word for home before it (a shop's 路 88 号 stays).
HOME_LABEL = re.compile(
    # (寄到 as a form's field, not in prose: "请把退货寄到…" names a warehouse; 寄到我家 is a home)
    r"(住址|家住|住在|家庭地址|居住地|现住|收货地址|寄到\s*:|(?:我|我们|他|她|他们|自己)家(?:的)?(?:地址|住址)?(?:是|在)?|"
    r"(?<![入居])住|home|(?:lives?|living|resides?|residing) at|address(?: is)?|"
    r"adresse|anschrift|wohnhaft(?: in)?|dirección|domicilio|indirizzo|endereço|住所|residence|domicile|"
    # (German puts the particle of "schicken an" last, before the address: "schick mir bitte die Wolle an:")
    r"(?<![a-z])an\s*:|"
    # "ship to Jane Doe, 42 Elm Street": the recipient's name may come between
    r"(?:ship|deliver|send|post|mail)(?:s|ed|ping|ing|y)? (?:it |this |them )?to(?: [a-z .'-]{1,30},)?)\W{0,12}$"
)
# A street line in the three orders Latin-script countries write it: the number, the name and the kind of street
# (42 Elm Street); the number, then the kind before the name (12 rue de la Paix); the name with the kind in it, then
# the number (Hauptstraße 5, Via Roma 12, Calle Mayor 10, Keizersgracht 123).
_LETTERS = r"[a-z\u00c0-\u024f'.-]"
_STREET_KIND_AFTER = (
    r"street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd|way|court|ct|place|pl|terrace|close|crescent|"
    r"parkway|pkwy|highway|hwy|square|sq|row|mews|gardens|grove|hill|parade|esplanade|promenade|circuit|walk|rise|"
    r"quay|wharf|alley|trail|loop|"
    # (Australia Post's abbreviations of the kinds above: Cres, Tce, Pde, Cct)
    r"cres|tce|pde|cct"
)
_STREET_KIND_BEFORE = (
    r"rue|avenue|av\.|boulevard|bd|place|chemin|allée|impasse|quai|cours|via|viale|piazza|corso|vicolo|calle|avenida|"
    # (and Spain's abbreviations: C/ de Verdi 48, Avda. …, Pza. …)
    r"carrer|rua|praça|travessa|plaza|paseo|ulica|ul\.|c/|avda\.?|pza\.?|"
    # (Basque kale, Papiamento kaya, Malay and Indonesian jalan, Albanian rruga, Romanian strada and calea, Polish
    # aleja: Kale Nagusia 21, Kaya Grandi 12, Jalan Ampang 50, Strada Lipscani 8)
    r"kale|kaya|jalan|jl\.|rruga|strada|stradă|calea|aleja"
)
_STREET_KIND_IN_NAME = (
    # (not "ring" or "gate", which end English words: "during 2024", "investigate 5")
    r"straße|strasse|str\.|weg|gasse|allee|platz|damm|ufer|gracht|straat|laan|plein|kade|vej|gade|gatan|vägen|gata|"
    # (and the definite forms Norway writes a street's name with: Nygårdsgaten, Storgata, Kirkevegen)
    r"veien|vegen|gaten|stien|plassen|bakken|katu|utca|"
    # (and Iceland's: Hafnarstræti, Laugavegur, Miklabraut, Skólavörðustígur)
    r"stræti|vegur|braut|stígur"
)
_STREET = (
    # (a rural road may carry its own number: 4512 Concession Rd 8)
    rf"(?:\b(?:\d{{1,5}}/)?\d{{1,5}}[a-z]?\s+(?:(?:\d{{1,3}}(?:st|nd|rd|th)|{_LETTERS}+)\s+){{1,4}}(?:{_STREET_KIND_AFTER})\b\.?"
    r"(?:\s\d{1,3}(?=,))?|"
    rf"\b\d{{1,5}}(?:\s?(?:bis|ter))?,?\s+(?:{_STREET_KIND_BEFORE})\s+(?:{_LETTERS}+\s+){{0,4}}{_LETTERS}*[a-z\u00c0-\u024f]|"
    # (Spain and Italy put a comma between the name and the number: C/ Feria, 41; Via Roma, 12)
    # (Norway and Sweden write a person's street as a word of its own after the name in the genitive: Thorvald Meyers
    # gate 58B, Olav Kyrres gate 12; never "the gate 12" of an airport)
    rf"\b(?:(?:{_STREET_KIND_BEFORE})\s+(?:(?:{_LETTERS}+\s+){{0,3}}{_LETTERS}+,?\s+)?|{_LETTERS}+\s?(?:{_STREET_KIND_IN_NAME})\s+|"
    rf"{_LETTERS}+s\s(?:gate|gata|vei|veg)\s+)"
    # (a Dutch floor after the number: 112-III, 112-hoog, 112-huis)
    r"\d{1,5}[a-z]?(?:[-/](?:\d{1,4}[a-z]?|i{1,3}|iv|hoog|huis|bis))?\b|"
    # a Japanese block address written in Latin letters: chome-ban-go, then the district (2-3-1 Marunouchi, 7 Chome-3-1
    # Hongo)
    rf"\b\d{{1,2}}(?:-|\s*chome-)\d{{1,3}}-\d{{1,3}},?\s+{_LETTERS}+)"
)
_UNIT = (
    # (Norway's flat number, H and four digits: "Thorvald Meyers gate 58B, H0304", the house's letter apart: "Kongens
    # gate 31 B, H0302")
    r"(?:,?\s*#\s*\d{1,3}-\d{1,5}[a-z]?|(?:\s[a-h])?,\s*h\d{4}\b|,?\s*(?:apt|apartment|flat|unit|suite|ste|app|appt|apto|piso|wohnung|top|#)\.?\s*[a-z\d-]{1,6}|"
    # a box or a flat in the languages that write it after the house number (Belgian bus 2, Polish m. 12, lok. 3,
    # Swedish lgh 1102)
    r"\s+(?:bus|bte|boîte|m\.|lok\.|stiege|stg\.|lgh)\s*\d{1,4}[a-z]?|"
    # (Finland's staircase and flat after the house number: Fleminginkatu 22 B 31, Hämeentie 5 as. 12)
    r"\s+(?:[a-h]\s?\d{1,3}|as\.?\s?\d{1,3})(?![\d\w]))"
)
# Postcodes: US ZIP and 5-digit European, Brazilian CEP (01310-100), UK, 6-digit (China, India), Dutch 1234 AB,
# Canadian A1A 1A1, Japanese 123-4567, Swedish 114 55, Polish 00-876. Four digits alone (Austria, Switzerland,
# Belgium, Denmark) only after the street (and its floor or door) and before a town, and never a year: "Hauptstraße 5,
# 1010 Wien", not "200 Market Street, since 2019". The town after a postcode goes with it.
_POSTCODE = (
    r"(?:\d{5}(?:-\d{4}|-\d{3})?|[a-z]{1,2}\d[a-z\d]?\s*\d[a-z]{2}|\d{6}|(?!(?:19|20)\d\d)\d{4}\s?[a-z]{2}|[a-z]\d[a-z]\s?\d[a-z]\d|"
    r"〒?\d{3}-\d{4}|\d{3}\s\d{2}|\d{2}-\d{3}|(?:nsw|vic|qld|wa|sa|tas|act|nt)\s+\d{4}|[ac-fhknprtv-y]\d{2}\s?[ac-fhknprtv-y\d]{4}|"
    # (Argentina's CPA: the province's letter, four digits and three letters, C1414DDH)
    r"[a-z]\d{4}[a-z]{3})\b"
)
_TOWN = r"[a-z\u00c0-\u024f][a-z\u00c0-\u024f'-]{1,20}"
# Up to two comma-separated parts after a street line (the town, the region), each ending at punctuation.
_TOWNS_AFTER = r"(?:,\s*[a-z\u00c0-\u024f][a-z\u00c0-\u024f .'-]{1,30}(?=[,.;:)?!\n]|$)){0,2}"
# An organisation's address stays even with a postcode: a word for a business place right before it ("Our office:
# 350 5th Avenue, New York, NY 10118", "门店地址：…").
_BUSINESS_WORDS = (
    r"office|offices|store|shop|headquarters|hq|branch|clinic|showroom|warehouse|restaurant|hotel|campus|factory|"
    r"venue|visit us|find us|hostel|guesthouse|studio|gallery|museum|salon|cafe|café|bakery|pharmacy|gym|"
    r"门店|本店|我店|我们店|我们的店|咱们店|店铺|商铺|公司|总部|办公室|分店|营业厅|营业部|仓库|诊所|酒店|餐厅|工厂|厂区|会议室|工作室|民宿|"
    r"旅舍|展厅|画廊|博物馆|药店|健身房"
)
BUSINESS_LABEL = re.compile(
    # (not across a question: "could you courier the fins to my place instead of the shop? 27 Fir Street, …")
    # (the venue's name may go on: "the Museum of Modern Art, …")
    rf"({_BUSINESS_WORDS})(?: of(?: the)?(?: [a-z'&-]+){{1,3}})?(?: address|地址|的地址)?(?: is)?"
    r"(?: at| in| on|在|位于|设在)?[^\w?？]{0,12}$"
)
# The same words anywhere in the clause before an address the learned finder found: its span may start past the
# house number ("Our showroom is at 88 Harbour | Drive, Suite 12, …").
BUSINESS_WORD = re.compile(rf"(?<![a-z])(?:{_BUSINESS_WORDS})(?![a-z])")
# One part of a list of names and numbers, one word and a number up to three digits (Hannah 8, Rory 10).
NAME_AND_NUMBER = re.compile(r"[^\W\d_][\w'’-]*\s+\d{1,3}")
# Inside a Chinese address the learned finder found, or right after it, a place of work or trade it names
# (…1399号菜鸟仓3号库, …京东物流园B区, …文三路 1 号仓库): a business's address, not a home's.
CHINESE_BUSINESS_IN_ADDRESS = re.compile(
    r"物流园|产业园|工业园|科技园|园区|仓|库|公司|工厂|厂|医院|诊所|学校|大学|学院|中学|小学|幼儿园|写字楼|商场|商城|"
    r"市场|中心|酒店|宾馆|门店|店|馆|银行|营业厅|车站|机场|码头"
)
# A part between the street and the postcode: a floor or door (3. OG links, 4º izq.), a district, a town, a region
# in brackets (Montréal (Québec)).
_ADDRESS_PART = r"[a-z\u00c0-\u024f\d .'º°()/-]"
# Between the parts of an address, a comma or a line break: a label's lines ("27 Marchmont Crescent", "Edinburgh",
# "EH9 1HN").
# (or a slash or a dash with spaces around it, as a label squeezed onto one line: "12, rue de Bonnevoie / L-1261
# Luxembourg", "bât. B – 12 cours Grandval – 20000 Ajaccio")
_PART_BREAK = r"(?:,\s*|[^\S\n]*\n\s*|[^\S\n]+[/–—][^\S\n]+)"
STREET_WITH_POSTCODE = re.compile(
    rf"{_STREET}{_UNIT}?(?:(?:{_PART_BREAK}{_ADDRESS_PART}{{1,30}}){{0,3}}(?:{_PART_BREAK}|,?\s*)(?:[a-z]{{1,2}}-)?{_POSTCODE}|"
    # (a floor or a door may come first: "Jagtvej 119, 3. tv., 2200 København N")
    rf"(?:,\s*{_ADDRESS_PART}{{1,30}}?){{0,2}}{_PART_BREAK}(?:[a-z]{{1,2}}-)?(?!(?:19|20)\d\d\b)\d{{4}}(?=\s+{_TOWN})|"
    # (three digits, as Iceland writes them, only before a town that ends the clause: "Hafnarstræti 88, 600
    # Akureyri", never "Hauptstraße 5, 200 Meter weiter")
    rf"{_PART_BREAK}\d{{3}}(?=\s+{_TOWN}(?:[,.;:)?!\n]|$))|"
    # four digits after the town, as New Zealand, Australia and South Africa write them (never a year)
    rf"(?:,\s*{_TOWN}(?:\s+{_TOWN})?){{1,3}},?\s+(?!(?:19|20)\d\d\b)\d{{4}}\b)"
    rf"(?:\s+{_TOWN}(?:\s+{_TOWN})?(?=[,.;:)?!\n]|$))?"
)
# Where a street has no word for its kind (9 Cnoc na Gréine, 4 Bishop's Walk), a postcode that only an address has
# still makes it one: the house number and the name, up to three parts, then a postcode with letters (UK, Ireland,
# Canada) or a state and its ZIP (TX 75093).
NUMBERED_LINE_WITH_POSTCODE = re.compile(
    rf"\b\d{{1,5}}[a-z]?\s+(?:{_LETTERS}+\s+){{0,3}}{_LETTERS}+(?:,\s*{_ADDRESS_PART}{{2,30}}?){{1,3}},?\s+"
    r"(?:[a-z]{1,2}\d[a-z\d]?\s*\d[a-z]{2}|[a-z]\d[a-z]\s?\d[a-z]\d|"
    r"[ac-fhknprtv-y]\d{2}\s?[ac-fhknprtv-y\d]{4}|[a-z]{2}\s\d{5}(?:-\d{4})?)\b"
    rf"(?:\s+{_TOWN}(?=[,.;:)?!\n]|$))?|"
    # the name, then the number, as Central Europe writes a street with no word for its kind, and a postcode in two
    # groups before the town (Vinohradská 112, 130 00 Praha 3; Hlavná 5/12, 040 01 Košice)
    rf"\b{_LETTERS}{{3,}}(?:\s+{_LETTERS}+){{0,2}}\s+\d{{1,4}}(?:/\d{{1,4}})?[a-z]?,\s*\d{{3}}\s\d{{2}}\s+{_TOWN}(?:\s+\d{{1,2}})?\b|"
    # (or, as Argentina writes it, the floor and flat after the number, then the CPA: Thames 1530, 4.º C, C1414DDH CABA)
    rf"\b{_LETTERS}{{3,}}(?:\s+{_LETTERS}+)?\s+\d{{1,5}}(?:,\s*{_ADDRESS_PART}{{1,20}}?){{0,2}},\s*[a-z]\d{{4}}[a-z]{{3}}\b"
    rf"(?:\s+{_TOWN}(?=[,.;:)?!\n]|$))?|"
    # the same with a Dutch postcode (four digits and two letters) and the house number's addition (142 bis, 7-hs,
    # 23a): Oudegracht 142 bis, 3511 AZ Utrecht
    rf"\b{_LETTERS}{{3,}}(?:\s+{_LETTERS}+){{0,2}}\s+\d{{1,4}}(?:[- ]?(?:bis|ter|hs|huis|[a-z]))?,\s*"
    rf"(?!(?:19|20)\d\d\b)\d{{4}}\s?[a-z]{{2}}\s+{_TOWN}\b"
)
# A Korean road-name address: the city or province, the district, the road (로) or street (길) and the building
# number, then perhaps the apartment block and flat (102동 803호) and the postcode in brackets.
KOREAN_ADDRESS = re.compile(
    r"(?:[가-힣]{2,8}(?:특별시|광역시|특별자치시|특별자치도|도|시)\s+)?(?:[가-힣]{1,8}(?:시|군|구)\s+){1,2}"
    r"(?:[가-힣]{1,8}(?:읍|면)\s+)?[가-힣\d]{1,15}(?:로|길)\s*\d{1,4}(?:-\d{1,4})?"
    r"(?:,?\s*\d{1,4}\s*동)?(?:\s*\d{1,5}\s*호)?(?:\s*\(\d{5}\))?"
)
# A Japanese address after its postal mark and code: 〒530-0041 大阪府大阪市北区天神橋4丁目7番12号 …805号室, up to
# the sentence's end.
JAPANESE_POSTAL_ADDRESS = re.compile(r"〒\s?\d{3}-\d{4}[^\n。，,；;！!？?]{4,80}")
# A street whose name has no word for its kind, then the house number, a postcode and the town, as Central Europe
# writes it (Lerchenfelder Gürtel 43/2/17, 1160 Wien): someone's when the number has a staircase or a flat after a
# slash (its `unit` group) or a word for home comes before it; "Invoice 1234, 5000 units" stays.
# (the postcode and the town may stand on the next line, as on an envelope: "Lauben 112\n39012 Meran")
CONTINENTAL_LINE = re.compile(
    rf"\b(?:{_LETTERS}{{3,}}[^\S\n]+){{1,3}}\d{{1,5}}[a-z]?(?P<unit>(?:/\d{{1,4}}[a-z]?){{0,3}})(?:,\s*|[^\S\n]*\n\s*)"
    r"(?:[a-z]{1,2}-)?"
    rf"(?!(?:19|20)\d\d\b)(?:\d{{4,5}}|\d{{2}}-\d{{3}})\s+{_TOWN}(?:[^\S\n]+{_TOWN})?"
)
# A street line without a postcode is someone's when, as in Chinese, it has a flat or unit, or a word for home comes
# before it (HOME_LABEL); the town after it goes with it. A shop's "200 Market Street" alone stays.
STREET_LINE = re.compile(rf"{_STREET}(?P<unit>{_UNIT}?){_TOWNS_AFTER}")
# A Singapore address: the block, the street, the floor and unit (#05-67), then Singapore and its six digits.
SINGAPORE_ADDRESS = re.compile(
    r"\b(?:blk|block)\s*\d{1,4}[a-z]?,?\s+[a-z .'-]{3,40}?(?:\s+\d{1,2})?(?:,?\s*#\d{1,3}-\d{1,5})?,?\s*"
    r"singapore\s*\d{6}\b"
)
# A Singapore or Malaysian unit (#11-246: floor and unit) in a line with a block (座, blk) or a six-digit postcode
# after the country: the line from its start in the clause ("盛港东通道271C座 #11-246 新加坡543271"). The caller
# keeps only the lines with the block or the postcode, so "ticket #11-246" stays.
UNIT_NUMBER_LINE = re.compile(
    r"[^\n:：，,。;；]{2,40}?#\d{1,3}-\d{1,5}[a-z]?(?:[,，]?\s*(?:singapore|新加坡|malaysia|马来西亚)?\s*\(?\d{5,6}\)?)?"
)
UNIT_LINE_IS_ADDRESS = re.compile(r"座|大牌|\bblk\b|\bblock\b|(?:singapore|新加坡|malaysia|马来西亚)\s*\(?\d{5,6}")
# A post-office box or a rural route with its town, state and ZIP (PO Box 412, Wrangell, AK 99929; RR 2 Box 118,
# Corydon, IA 50060): a mailing address only.
BOX_LINE = re.compile(
    r"\b(?:p\.?\s?o\.?\s?box|post office box|(?:rr|rural route|hc)\s*\d{1,4}(?:,?\s*box)?)\s*#?\d{1,6}"
    r"(?:,\s*[a-z][a-z .'-]{1,30}){1,2},?\s+[a-z]{2}\s+\d{5}(?:-\d{4})?\b"
)
# Hong Kong writes a flat and its floor first (Flat D, 23/F, Block 5, …, Chai Wan, HK): the flat and the floor are a
# home's, and the line goes to the territory's name when it follows.
HONG_KONG_FLAT = re.compile(
    r"\b(?:flat|rm|room)\s*[a-z\d]{1,4},?\s*\d{1,3}/f\b"
    r"(?:(?:,\s*[^,\n。;；:：]{2,40}?){0,6},\s*(?:hong kong|hk|kowloon|new territories|n\.t\.|香港)\b)?"
)
# Where a parcel, a letter or a visit goes: a destination's label (ship to, courier to, consignee, my address in
# Lisbon is, 寄到, 寄他家, 上门取件, 从我家出发), then the address as written, to the end of its sentence (a full stop
# after a word of five letters or more or a digit, " - ", a line's end, or for Chinese "，" or "。"). The caller
# keeps the values that have a digit and an address's shape (ADDRESS_SHAPE), so "ship to the store by 5pm" stays.
DESTINATION = re.compile(
    r"(?:\b(?:ship(?:ped|ping)?|send|sent|mail(?:ed)?|post(?:ed)?|courier(?:ed)?|deliver(?:ed|y)?|forward)"
    r"(?:\s+(?:it|them|this|these|the \w+|my \w+))?\s+(?:over\s+)?to\b|"
    r"\bbring\b[^.\n]{0,40}?\bto my (?:home|house|place|flat)\b|"
    r"\b(?:my |his |her |their )?(?:home|mailing|postal|delivery|military|shipping)\s+address"
    r"(?:\s+in\s+[a-z .'-]{2,20}?)?\s*(?:is|:)|"
    # (a household's own too, and as it is now: "Our address now is 2/47 …")
    r"\b(?:my|our)(?: new| current)? address(?:\s+in\s+[a-z .'-]{2,20}?)?(?:\s+(?:now|these days))?\s+is\b|"
    r"\bconsignee\b[^:\n]{0,40}:|"
    r"\brecipient\s*:|enviad[oa]s?\s+para|enviar\s+(?:a|para)|envoyer\s+à|schicken\s+an|liefern\s+an|"
    # (in Chinese the post's verbs only, 寄 and 邮, and 发 with the carrier or the goods: 送到 and 发 alone name any
    # place and any message)
    r"寄(?:到|给|去|回)?[\u4e00-\u9fff]{0,6}?[:：]|(?:寄|邮|发(?:物流|快递|货))到|上门(?:取件|服务|回收|安装|维修|地址)[:：]|"
    r"(?:我|他|她|我们)家(?:地址)?[:：]|从我家出发[:：]?|"
    # a bare 地址是: someone's only with a recipient after it (RECIPIENT_AFTER), else any shop's
    r"(?P<bare_address>(?<![\u4e00-\u9fff])地址(?:是|为)))"
    r"\s*[:：]?\s*"
    r"(?P<value>[^\n。]{6,140}?)"
    r"(?=\s*(?:[。\n]|$|\s[-–—]\s|(?<=[\d\u00c0-\u024fa-z]{5})\.(?:\s|$)|(?<=\d)\.(?:\s|$)|"
    r"，(?!\s*(?:邮区|邮编|邮政编码))|,\s*(?:收件人|联系人)|"
    r"\s(?:pls|please|thanks|thank you|the|my|do|does|can|could)\b))"
)
# A company's name ends in its legal form: a line or a clause ending so, right before an address, names whose it is
# (an imprint's "Brauerei Hollerbräu GmbH\n<street>, <postcode>").
LEGAL_FORM_BEFORE = re.compile(
    r"(?<![a-z])(?:gmbh|ag|kg|ug|ltd\.?|limited|inc\.?|llc|llp|plc|corp\.?|s\.a\.?|s\.l\.?|sarl|sas|s\.r\.l\.?|srl|"
    r"s\.p\.a\.?|spa|b\.v\.?|n\.v\.?|pty\.?(?: ltd\.?)?|lda\.?|oy|a/s|aps|sp\. z o\.o\.|有限公司|株式会社)"
    r"[^\S\n]*[,—–-]?\s*$"
)
# Opening hours right after an address make it a place of business ("…, 1200-067 Lisboa. Aberta de terça a domingo").
OPEN_AFTER = re.compile(
    r"^[^\n]{0,24}?(?<![a-z])(?:open(?:s|ing hours)?|aberta|aberto|abierto|abierta|geöffnet|öffnungszeiten|ouvert|"
    r"horaires|aperto|orari)(?![a-z])|^[^\n]{0,24}?营业"
)
# An organisation's place in the value or just before its label (a returns warehouse, a court, a shop): not a home.
ORGANISATION_PLACE = re.compile(
    r"退货|退回|仓|物流|公司|门店|店|工厂|厂|中心|大学|学校|医院|法院|工作室|"
    r"\b(?:warehouse|depot|office|reception|court|store|shop|ltd|inc|llc|gmbh|company|hotel|hospital|school|"
    r"university|factory|clinic|studio|salon|workshop|gym|restaurant|cafe|bakery|showroom|branch|headquarters|hq)\b"
)
# Returns go to a warehouse: "退货请寄到…" names no one's home (within a few characters before the label).
RETURNS = re.compile(r"(?:退货|退回|退换)\W{0,2}\w{0,4}\W{0,3}$")
# A meeting point named before its address: the public place where a group meets ("we meet at the Colosseum, Piazza
# del Colosseo, 1, …", "outside the Empire State Building, 20 W 34th St., …"), which is nobody's home. Not a house or a
# family's ("at the Hendersons', 12 Oak St").
MEETING_PLACE = re.compile(
    r"\b(?:meet|meets|meeting|gather|gathers|assemble|assembles)\b[^.?!\n]{0,24}?\b(?:at|outside|in front of|by|near|"
    r"opposite)\s+the\s+(?![a-z' -]*(?:house|home|flat|apartment|cottage|'s?)\s*[,，]?\s*$)[a-z' -]{2,40}"
    # (the place's square or park may come between: "the Eiffel Tower, Champ de Mars, 5 Av. …")
    r"(?:[,，]\s*[a-z' -]{2,30}){0,2}[,，]\s*$"
)
# A business announcing where it is now, before the label: "Our clinic moved! new address: …", "我们店搬到…".
BUSINESS_MOVED = re.compile(
    r"\b(?:our|we) \w+ (?:has |have )?moved\b|\bour (?:new )?"
    r"(?:address|location|premises)\b|(?:店|公司|诊所|工作室)搬|新店|开业"
)
# Whose a destination is. A verb of sending ("ship to", "enviadas para", 寄到) names a person's address only with
# the person: a name and a comma after it in Latin script ("courier to Meera Iyer, Flat 5C, …"), in Chinese a home,
# a person or 给 in the label (寄到我舅舅家, 寄给表姐, 寄他家) or a recipient after the address (…，收件人 黄志伟).
# "请寄到上海市嘉定区宝安公路 2999 号" is where a business takes its returns.
SENDING_VERB = re.compile(
    r"^(?:ship|send|sent|mail|post|courier|deliver|forward|enviad|enviar|envoyer|schicken|liefern|寄|邮|发)"
)
NAME_FIRST = re.compile(
    r"^[a-z\u00c0-\u024f][a-z\u00c0-\u024f'.-]+(?:\s+[a-z\u00c0-\u024f][a-z\u00c0-\u024f'.-]+){1,3}\s*,"
)
PERSON_IN_LABEL = re.compile(r"家|我|你|他|她|给|亲|友|妈|爸|哥|姐|弟|妹|舅|姨|叔|婶|姑|奶|爷|婆|公")
# The hundred commonest Chinese surnames: a name of two or three characters after an address, alone in its clause
# ("…西街9号（262400），孙立军。"), is its recipient.
_SURNAME = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆"
    "汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_CHINESE_NAME = rf"[{_SURNAME}][\u4e00-\u9fff]{{1,2}}"
RECIPIENT_LAST = re.compile(rf"[,，\s]\s*{_CHINESE_NAME}\s*收?$")
# A recipient named just after an address (…22号后厢房，邮编200021，收件人沈佳怡): a parcel's, so someone's home.
RECIPIENT_SOON_AFTER = re.compile(r"^(?P<between>[^\n。]{0,20}?)(?:收件人|收货人|取件人|寄件人)")
# A recipient's name right after the house or the room, alone in its clause (…椰林坊巷9号 蔡雨桐，L码): the
# destination ends there.
RECIPIENT_NAMED = re.compile(rf"(?<=[号室楼座户房\d])\s*[,，]?\s*{_CHINESE_NAME}\s*收?(?=\s*[,，。!！]|$)")
RECIPIENT_AFTER = re.compile(
    rf"^\W{{0,3}}(?:收件人|收货人|取件人|寄件人|联系人|[\u4e00-\u9fff]{{2,4}}收|{_CHINESE_NAME}(?=[。，,.；;!！]|$))"
)
# What an address has: a Chinese place or house word, a street's kind, a postcode's shape, or three parts and more.
ADDRESS_SHAPE = re.compile(
    r"[省市区县镇乡村路街巷弄号楼室栋幢座坊寨屯组团连嘎旗苑]|"
    rf"\b(?:{_STREET_KIND_AFTER}|{_STREET_KIND_BEFORE}|flat|apt|apto|unit|box|block|blk|lot|phase|floor|lgh|hẻm|"
    r"phường|quận|jalan|taman|brgy|barangay|c/)\b|\d{5,6}|\d{3}\s\d{2}\b|\d{4}-\d{3}\b|\d{5}-\d{3}\b|"
    r"[^,，]+[,，][^,，]+[,，][^,，]+"
)
# A flat first, then a named building or street with no house number (Flat 2, Rosewood Court, London): a home by
# its flat (a suite or a unit may be an office's, so they do not count).
FLAT_LINE = re.compile(
    rf"\b(?:flat|apt|apartment)\.?\s*[a-z\d-]{{1,6}},?\s+(?:{_LETTERS}+\s+){{1,4}}"
    rf"(?:{_STREET_KIND_AFTER}|house|mansions|tower|building)\b\.?"
    rf"{_TOWNS_AFTER}"
)
# Domain labels may be Chinese (internationalised: 例子.公司). A Chinese top-level domain is 2–3 characters; glued to
# the Chinese prose after it (…@例子.公司联系), only its first two are taken.
_DOMAIN_LABEL = r"[a-z0-9\u4e00-\u9fff](?:[a-z0-9\u4e00-\u9fff-]*[a-z0-9\u4e00-\u9fff])?"
_TLD = r"(?:[a-z]{2,}(?![a-z0-9-])|[\u4e00-\u9fff]{2,3}(?![\u4e00-\u9fff])|[\u4e00-\u9fff]{2})"
# The local part: RFC 5322's atom characters people use (dots, plus, dash, underscore, an apostrophe inside a name).
_LOCAL = r"(?<![a-z0-9._%+'-])[a-z0-9._%+-]+(?:'[a-z0-9._%+-]+)*"
# "@" as people write it to keep an address from scrapers or as a URL encodes it: " @ ", (at), [at], {at}, <at>,
# 艾特, %40; and the dot as (dot), [dot], (点). A bare 点 is not a dot: it is too common in Chinese prose.
_AT = r"(?:\s?@\s?|%40|\s*[(\[{<]\s*(?:at|艾特)\s*[)\]}>]\s*|\s?艾特\s?)"
_DOT = r"(?:\.|\s*[(\[{<]\s*(?:dot|点)\s*[)\]}>]\s*)"
EMAIL = re.compile(rf"{_LOCAL}{_AT}{_DOMAIN_LABEL}(?:{_DOT}{_DOMAIN_LABEL})*{_DOT}{_TLD}")
# Spelled out, "zhang.san at corp dot com": only with both words, so "look at the site" stays.
EMAIL_SPELLED = re.compile(
    rf"{_LOCAL}\s+at\s+{_DOMAIN_LABEL}(?:\s+dot\s+{_DOMAIN_LABEL})*\s+dot\s+[a-z]{{2,}}(?![a-z0-9-])"
)
# Reserved for documentation (RFC 2606): user@example.com is a placeholder. A person's name before it is not: people
# who will not paste a real address write a colleague's as "m.okafor82@mailbox-ng.example.org", and what is in the
# text is still that person's name; so only a stand-in's or a role's mailbox there is one.
_STAND_IN_MAILBOX = (
    r"user(?:name)?\d?|(?:your|my|first|full)[._-]?(?:name|email|mail|address)|name|you|me|someone|somebody|anyone|"
    r"(?:john|jane|j)[._-]?doe|first[._-]?last|firstname[._-]?lastname|alice|bob|foo|bar|baz|test(?:er|user)?\d?|"
    r"demo|sample|example|admin|info|support|help|contact|hello|hi|no-?reply|mail|email|sales|team|office|billing|"
    r"service|webmaster|postmaster|abuse|security|privacy|jobs|careers|hr|press|marketing|orders?"
)
# The same for the reserved top-level domains (.test, .invalid, .localhost, .example): "moira.tennant@readers.test" is
# still Moira's address as far as the text goes.
EMAIL_PLACEHOLDER = re.compile(
    rf"^(?:{_STAND_IN_MAILBOX})@(?:[a-z0-9-]+\.)*(?:example\.(?:com|org|net)|[a-z0-9-]+\.(?:test|invalid|localhost|example))$"
)

# -------------------------------------------------------------------------------- numbers without a label
# 18 characters, whole or grouped 6-8-4 / 6-4-4-4 (the caller checks the birth date and check digit).
ID_NUMBER = re.compile(r"(?<![0-9a-z])\d{6}([ -]?)(?:\d{8}|\d{4}\1\d{4})\1\d{3}[\dx](?![0-9a-z])")
# A number grouped in fours as the networks print it (4-4-4-4, and up to 3 digits more), one separator throughout:
# CARD_NUMBER's first form, except that the digits after the fourth group keep their separator too.
GROUPED_CARD_NUMBER = re.compile(r"(?<![0-9a-z.\-/])(?:\d{4}([ -])){3}\d{4}(?:\1\d{1,3})?(?![0-9a-z])")
# 13–19 digits (the caller checks Luhn), whole or grouped as cards are printed: 4-4-4-4(-3), 4-6-5 (American
# Express), 4-6-4 (Diners Club), with one separator throughout.
CARD_NUMBER = re.compile(
    r"(?<![0-9a-z.\-/])(?:\d{4}([ -])){3}\d{4}(?:\1?\d{1,3})?(?![0-9a-z])"
    r"|(?<![0-9a-z.\-/])\d{4}([ -])\d{6}\2\d{4,5}(?![0-9a-z])"
    r"|(?<![0-9a-z.\-/])\d{13,19}(?![0-9a-z])"
)
# A card's or a bank's word before a number grouped as the networks print it: a card number even when its check digit
# is wrong (新的是建行的：6217 0012 4856 3390 215).
CARD_WORD = re.compile(r"卡|银行|[工农中建交招]行|\bcards?\b")
# A card network's name or a card's kind, before or just after a number in a card's shape ("4024…8823, Visa debit"):
# the user names what the number is, so its check digit does not decide.
CARD_NAME = re.compile(
    r"\b(?:visa|master\s?card|maestro|amex|american express|discover|diners|jcb|unionpay|debit|credit)\b|银联|借记|信用"
)
# How far after a number a card's name still names it ("…8823, Visa debit").
CARD_NAME_AFTER = 24
# A number grouped in fours as the networks print it, starting as they issue, is a card's when a card is spoken of
# this far around it, either side ("…not a valid card number. I typed 4929 1834 5562 0911 …, an ordinary Visa").
GROUPED_CARD_TALK = 80
# A card's number spoken of as one: with a number run together (no grouping) of a card's length (16 digits, 15 for
# American Express, up to 19 for UnionPay and Maestro) that starts as the networks issue, this near either side, it is
# the card's whatever its check digit ("…keeps saying 'Please enter a valid card number' when I put in 4248…", 卡号输了
# 6228…). Stricter than CARD_WORD: 卡 alone is in 打卡 and 卡车.
CARD_NUMBER_TALK = re.compile(r"\bcard (?:number|no\b|details)|\bcard ?#|卡号|银行卡|信用卡|借记卡|储蓄卡")
CARD_RUN_LENGTHS = frozenset(range(15, 20))
# The first digits the card networks issue under (Visa 4, Mastercard 51-55 and 22-27, American Express 34/37, Diners
# and JCB 36/38/35, UnionPay 62, Discover 6011/644-65): a number named a card must start as one ("visa application
# 20240512345678" is no card).
CARD_ISSUER_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[4-8]|62|6011|64[4-9]|65")
# Words of banking: a text with one is about money moving, so an IBAN-shaped number in it is an account's.
BANKING = re.compile(
    r"\biban\b|\baccount|\bbank|rekening|konto|compte|cuenta|\bconto\b|transfer|überweis|virement|bonifico|"
    r"\brent\b|\bpay(?:ment|ing|s|out)?\b|\brefund|\bdeposit|reimburs|\bsalary|\bwages?\b|\bwire\b|\bremit|"
    r"\bsepa\b|erstatt|rembours|reembols|rimbors|银行|账户|账号|帐号|转账|汇款|收款|付款|退款|押金|工资|报销"
)
IBAN = re.compile(r"(?<![a-z0-9])[a-z]{2}\d{2}(?:\s?[a-z0-9]{4}){2,7}(?:\s?[a-z0-9]{1,4})?(?![a-z0-9])")
# A number introduced as an order, invoice or tracking number, or as a product's code, is a reference, not personal
# data.
REFERENCE_LABEL = re.compile(
    r"(订单|单号|运单|快递|物流|发票|编号|流水|工单|货号|型号|批号|order|invoice|tracking|ticket|ref|no\.|#|sku|"
    r"serial|part|"
    # (a code's or a file's number said to be one: "the confirmation code is …", "case number …")
    r"(?:code|case|booking|confirmation|reservation|reference|policy|claim)(?: number| no\.?)?(?: is| was)?)\W{0,3}$"
)

# ------------------------------------------------------------------------------- phone numbers abroad
# Which numbering a number written without +CC follows: the country the text names (phonenumbers then reads
# 07911 123456 as British). Names in English and Chinese, matched on lower-cased text.
REGION_CUES: list[tuple[str, re.Pattern[str]]] = [
    ("US", re.compile(r"\b(?:us|usa|u\.s\.|united states|america|american)\b|美国")),
    ("GB", re.compile(r"\b(?:uk|u\.k\.|united kingdom|britain|british|england|london)\b|英国|伦敦")),
    ("HK", re.compile(r"\b(?:hong kong|hk)\b|香港")),
    ("SG", re.compile(r"\bsingapore\b|新加坡")),
    ("TW", re.compile(r"\btaiwan\b|台湾|臺灣")),
    ("MO", re.compile(r"\bmacau\b|澳门")),
    ("JP", re.compile(r"\bjapan(?:ese)?\b|日本")),
    ("KR", re.compile(r"\b(?:korea|korean)\b|韩国")),
    ("AU", re.compile(r"\baustralia(?:n)?\b|澳大利亚|澳洲")),
    ("CA", re.compile(r"\bcanad(?:a|ian)\b|加拿大")),
    ("DE", re.compile(r"\bgerman(?:y)?\b|德国")),
    ("FR", re.compile(r"\b(?:france|french)\b|法国")),
    ("IN", re.compile(r"\bindia(?:n)?\b|印度")),
    ("MY", re.compile(r"\bmalaysia(?:n)?\b|马来西亚|\bkuala lumpur\b|吉隆坡")),
    # (and the countries and cities people write from beside these, read only for a number in the text's own format)
    ("IE", re.compile(r"\b(?:ireland|dublin|galway)\b|爱尔兰")),
    ("ES", re.compile(r"\b(?:spain|madrid|barcelona|seville|valencia)\b|西班牙")),
    ("IT", re.compile(r"\b(?:italy|rome|milan|naples|florence|turin)\b|意大利")),
    ("PT", re.compile(r"\b(?:portugal|lisbon)\b|葡萄牙")),
    ("BR", re.compile(r"\b(?:brazil|brasil|são paulo|sao paulo|rio de janeiro)\b|巴西")),
    ("MX", re.compile(r"\b(?:mexico|méxico|guadalajara|monterrey)\b|墨西哥")),
    ("NL", re.compile(r"\b(?:netherlands|nederland|amsterdam|rotterdam|utrecht)\b|荷兰")),
    ("PL", re.compile(r"\b(?:poland|polska|warsaw|warszawa|kraków|krakow)\b|波兰")),
    ("NZ", re.compile(r"\b(?:new zealand|auckland|wellington|christchurch)\b|新西兰")),
    ("ZA", re.compile(r"\b(?:south africa|johannesburg|cape town|durban)\b|南非")),
    ("KE", re.compile(r"\b(?:kenya|nairobi|mombasa)\b|肯尼亚")),
    ("NG", re.compile(r"\b(?:nigeria|lagos|abuja)\b|尼日利亚")),
    ("PH", re.compile(r"\b(?:philippines|manila|cebu)\b|菲律宾")),
    ("TH", re.compile(r"\b(?:thailand|bangkok|chiang mai)\b|泰国")),
    ("VN", re.compile(r"\b(?:vietnam|viet nam|hanoi|saigon|ho chi minh city)\b|越南")),
    ("ID", re.compile(r"\b(?:indonesia|jakarta|surabaya)\b|印尼|印度尼西亚")),
    ("AE", re.compile(r"\b(?:uae|dubai|abu dhabi)\b|迪拜|阿联酋")),
    ("CH", re.compile(r"\b(?:switzerland|zurich|zürich|geneva|genève)\b|瑞士")),
    ("SE", re.compile(r"\b(?:sweden|stockholm|gothenburg|göteborg)\b|瑞典")),
]
# Where a labelled number that mainland numbering does not know is tried, in this order.
REGIONS = ("US", "GB", "HK", "SG", "TW", "MO", "JP", "KR", "AU", "CA", "DE", "FR", "IN", "MY")
# To call someone, and the word before the number, in French, Spanish, Italian, Portuguese and German.
_CALL_VERB = (
    r"appel(?:ez|le|er)|t[ée]l[ée]phon(?:ez|e)|llam(?:a|e|ad|ar)|chiam(?:a|ate|are)|lig(?:a|ue|ar)|ruf(?:en|t)?"
)
_CALL_AT = r"au|à|al|a|allo|para|pelo|no|unter|an|sur"
# A phone label, then the number (run on the text as written, any case).
PHONE_LABELLED = re.compile(
    r"(?:手机|电话|座机|固话|联系方式|微信|whatsapp|landline|telegram|signal|phone|mobile|cell|tel|call me|text me|"
    # (someone to call or text on a number: "Text Bec on 0491 570 158", "ring the twins' dad at …")
    r"reach me|\b(?:call|text|ring|sms|message|whatsapp)\s+(?:(?:[^\W\d_]|')+\s+){1,3}?(?:on|at)\b|"
    # (the writer names themselves between: "ring me, Bernadette (unit 3), on …")
    r"\b(?:call|text|ring|phone)\s+me,\s+[^,\n]{1,30},\s+(?:on|at)\b|"
    # (the person to contact, named: "Contact person is Bronwyn on (02) …", "contact Jo at …")
    r"\bcontact(?: person)?(?: is|:)?\s+(?:(?:[^\W\d_]|')+\s+){1,3}?(?:on|at)\b|"
    # (the number the writer says to use: "Could you ring me? Best number is 0161 …")
    r"\bbest (?:contact |phone )?number\b|"
    # (the writer's own number in the languages people write notices in: "Mi número es …", "Numer do mnie: …")
    r"\b(?:my|mi|mon|mein|meine|il mio|o meu|meu|mój|moj|mijn) (?:phone )?"
    r"(?:number|número|numero|numéro|nummer|numer)\b|"
    r"numer do mnie|numer telefonu|número de (?:teléfono|telefone|celular|móvil)|numéro de (?:téléphone|portable)|"
    r"telefonnummer|handynummer|"
    # (in the languages of the notices people ask to shorten: "Appelez Maëlle au …", "Llama a Lucía al …")
    # (a person's or the writer's own only, as PERSON_TO_CALL and OWN_PHONE_LABEL say: "Appelez le service client
    # au …" is a business's)
    rf"(?P<foreign>\b(?:{_CALL_VERB})(?:-moi|-nous)?\s+(?:[^\W\d_]+\s+){{0,3}}?(?:{_CALL_AT})\b))"
    r"[^\d+()\n]{0,12}?(?P<value>\+?\(?\d[\d\s().-]{5,18}\d)",
    re.IGNORECASE,
)
# A number written as a national mobile is dialled: the trunk 0, then groups of digits with one kind of separator
# throughout (06 12 34 56 78, 0612 345 678, 07911 123456), 10-11 digits in all (the caller counts them and asks
# phonenumbers whether a common region reads it as a mobile).
NATIONAL_GROUPED = re.compile(r"(?<![\d+.,/-])0\d{1,4}([ .-])\d{2,6}(?:\1\d{2,4}){0,3}(?![\d.,/-]?\d)")
# The label of the writer's own line: "ring me at home on", "call me on", "my landline", "best number", 我家电话.
OWN_PHONE_LABEL = re.compile(
    r"\b(?:me|my|home|best|moi|mich|mir|mi|mon|mein|meine|mio|meu|minha|mój|moj|mijn|mnie)\b|我|家里|家中|住宅",
    re.IGNORECASE,
)
# Someone named by a first name alone right before the number ("Ring Helen on (02) 5550 3871"): a person's line, a
# landline too. A business names itself with more words, or by a desk (Reception, Sales, the office).
PERSON_TO_CALL = re.compile(
    # (Spanish puts "a" before a person: "Llama a Lucía al …")
    rf"\b(?i:call|text|ring|sms|message|whatsapp|contact(?: person)?(?: is|:)?|{_CALL_VERB})\s+(?:a\s+)?"
    # (or by a title and the surname: "Ring Mrs Kowalczyk on …")
    r"(?:(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Mme|Mlle|Herr|Frau|Sr|Sra|Srta)\.?\s+)?"
    r"(?!(?:Reception|Sales|Support|Accounts|Admin|Office|Us|Our|The|Enquiries|Bookings)\b)[A-Z][^\W\d_A-Z]{1,15}\s+"
    rf"(?i:on|at|{_CALL_AT})\b[^\d+()\n]{{0,12}}?$"
)
# A North American number written with its country code and dashes or dots (1-800-222-1222), which mainland
# numbering would read as an 11-digit mobile.
NANP_WITH_ONE = re.compile(r"(?<![\d+-])1[-.]\d{3}[-.]\d{3}[-.]\d{4}(?![\d-])")
# A mainland fixed line as written after a phone label: trunk 0, a 2–3 digit area code (in brackets or not), a 7–8
# digit subscriber number, also when the area's numbering plan has since changed (phonenumbers then says invalid).
MAINLAND_LANDLINE_SHAPE = re.compile(r"\(?0[1-9]\d{1,2}\)?[\s-]?\d{3,4}[\s-]?\d{4}")
# What makes a fixed line a business's public line rather than someone's, just before it: a public-line label
# (客服, 热线, 总机, hotline, fax), or an organisation as the line's owner (退货仓的电话, 门店电话, the hotel's phone).
# A person's desk line (办公电话, office phone) is still theirs.
_ORGANISATION = (
    r"(?:公司|门店|商店|店|仓|仓库|中心|医院|银行|酒店|宾馆|学校|物业|前台|局|厅|馆)"
    r"|(?:company|store|shop|warehouse|hotel|hospital|bank|school|reception|front desk)(?:'s)?"
)
PUBLIC_LINE_LABEL = re.compile(
    r"(客服|热线|总机|服务电话|咨询电话|服务台|传真|hotline|helpline|switchboard|customer service|support line|fax|"
    rf"(?:{_ORGANISATION})\s*(?:的)?\s*(?:电话|座机|固话|号码|phone|number|line|tel))"
    r"[^\d]{0,12}$"
)
# The North American way to write a number: the area code in brackets, (415) 555-2671. Mainland numbering writes
# its area codes with a leading 0 and no brackets, so a number in this shape is read as North American.
NANP_NUMBER = re.compile(r"(?<![\d(])\(\d{3}\)\s?\d{3}[-.\s]\d{4}(?!\d)")
# The same number without brackets, the groups 3-3-4 joined by one kind of separator (773.555.0162, 415-555-2671):
# mainland numbering writes a fixed line's area code after the trunk 0 (0773-5550162), so after a phone label this
# shape is read as North American, not as a mainland line whose 0 was dropped. Not 400 or 800: mainland's own
# hotlines are written so (400-820-8820).
NANP_GROUPED = re.compile(r"(?![48]00)[2-9]\d{2}([-.])\d{3}\1\d{4}")
# The same shape standing alone in prose, not inside a longer code or number (INV-312-555-0147, 2024-312-555-0147).
NANP_GROUPED_ALONE = re.compile(rf"(?<![\w.+/-]){NANP_GROUPED.pattern}(?![\w/-]|\.\d)")
