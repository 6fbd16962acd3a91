"""The command line reaches the store: ``convert`` to and from a store URL, ``stats`` and ``validate`` on one."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from orion_messages import Message, StoreError, _store_cli, _store_ops, load
from orion_messages._cli_text import display_width
from orion_messages.cli import main
from orion_messages.store import ConversationStore, masked_url, open_store, parse_store_url

from ..conftest import FIXTURES
from .test_store import raw_sql

GOLDEN = FIXTURES / "v0.7" / "tool-loop-parallel.json"


def with_conversation(url: str, conversation: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}conversation={conversation}"


def test_convert_into_a_store_and_back_is_byte_identical(store_url: str, tmp_path: Path) -> None:
    target = with_conversation(store_url, "c1")
    assert main(["convert", str(GOLDEN), target]) == 0
    assert main(["convert", str(GOLDEN), target]) == 0  # again: replaced, not doubled
    with open_store(store_url) as store:
        assert store.load("c1") == load(GOLDEN)
    back = tmp_path / "back.json"
    assert main(["convert", target, str(back)]) == 0
    assert back.read_bytes() == GOLDEN.read_bytes()
    log = tmp_path / "back.jsonl"
    assert main(["convert", target, str(log)]) == 0
    assert main(["convert", str(log), with_conversation(store_url, "c2")]) == 0
    with open_store(store_url) as store:
        assert store.load("c2") == load(GOLDEN)


def test_stats_on_a_store_url(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = with_conversation(sqlite_url, "c1")
    assert main(["convert", str(GOLDEN), target]) == 0
    capsys.readouterr()
    assert main(["stats", "--format", "json", target]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["messages"] == len(load(GOLDEN))
    assert summary["path"] == target


def test_validate_checks_every_conversation_of_a_store(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a", "b"):
        assert main(["convert", str(GOLDEN), with_conversation(store_url, name)]) == 0
    capsys.readouterr()
    assert main(["validate", store_url]) == 0
    assert "checked 2 stored conversations" in capsys.readouterr().out
    raw_sql(
        store_url, "UPDATE orion_messages SET data = ? WHERE conversation_id = 'b' AND position = 1", ("{}",)
    )
    assert main(["validate", "--format", "json", store_url]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [f["valid"] for f in report["files"]] == [True, False]
    error = report["files"][1]["errors"][0]
    # Source first, as a file's problems read: the row, then the JSON path, then what is wrong.
    assert error["location"].startswith('conversation "b", position 1: ')
    assert 'conversation "b"' not in error["message"]
    assert main(["validate", with_conversation(store_url, "a")]) == 0


def test_validate_counts_an_empty_store_as_0_stored_conversations(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    open_store(sqlite_url).close()
    one = tmp_path / "one.json"
    one.write_text('[{"id":"m","role":"user","content":"hi","timestamp":1}]', encoding="utf-8")
    assert main(["validate", sqlite_url]) == 0
    assert (
        capsys.readouterr().out
        == "checked 0 stored conversations (0 messages in the valid ones): all valid\n"
    )
    assert main(["validate", sqlite_url, str(one)]) == 0
    assert capsys.readouterr().out == (
        "checked 0 stored conversations and 1 file (1 message in the valid ones): all valid\n"
    )
    assert main(["validate", "--format", "json", sqlite_url, str(one)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["stores"] == [{"url": sqlite_url, "conversations": 0}]
    assert [entry["path"] for entry in report["files"]] == [str(one)]
    with open_store(sqlite_url) as store:
        store.create("a")
        store.create("b")
    assert main(["validate", "--format", "json", str(one), sqlite_url]) == 0
    assert json.loads(capsys.readouterr().out)["stores"] == [{"url": sqlite_url, "conversations": 2}]
    assert main(["validate", "--format", "json", str(one)]) == 0
    assert json.loads(capsys.readouterr().out)["stores"] == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["stats", "sqlite:///{db}"], "add ?conversation=ID"),
        (["stats", "sqlite:///{db}?conversation=nope"], 'no conversation "nope"'),
        (["convert", "sqlite:///{db}?conversation=nope", "out.json"], 'no conversation "nope"'),
        (["validate", "sqlite:///{db}?mode=ro"], "unknown parameter"),
    ],
)
def test_store_url_problems_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    database = tmp_path / "chats.db"
    open_store(f"sqlite:///{database}").close()
    assert main([part.format(db=database) for part in argv]) == 1
    assert expected in capsys.readouterr().err


def test_validate_labels_each_conversation_with_a_url_that_reads_it_back(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # An id with "&" is percent-encoded in the label, and the URL's other parameters stay.
    assert main(["convert", str(GOLDEN), with_conversation(store_url, "x%26y")]) == 0  # the id x&y
    capsys.readouterr()
    assert main(["validate", "--format", "json", store_url]) == 0
    (label,) = [entry["path"] for entry in json.loads(capsys.readouterr().out)["files"]]
    assert label.endswith("conversation=x%26y")
    assert label.split("?", 1)[0] == masked_url(store_url).split("?", 1)[0]
    assert main(["stats", label]) == 0


def test_validate_lists_a_store_a_page_at_a_time(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store_cli, "PAGE_SIZE", 2)
    asked: list[Any] = []
    reading = ConversationStore.conversation_ids

    def noted(store: ConversationStore, *, limit: int | None = None, after: str | None = None) -> list[str]:
        asked.append((limit, after))
        return reading(store, limit=limit, after=after)

    monkeypatch.setattr(ConversationStore, "conversation_ids", noted)
    names = ["e", "b", "d", "a", "c"]  # created in this order, checked by id
    for name in names:
        assert main(["convert", str(GOLDEN), with_conversation(store_url, name)]) == 0
    capsys.readouterr()
    assert main(["validate", "--format", "json", store_url]) == 0
    labels = [entry["path"] for entry in json.loads(capsys.readouterr().out)["files"]]
    assert [label.rsplit("conversation=", 1)[1] for label in labels] == ["a", "b", "c", "d", "e"]
    # Each page after the previous page's last id; 5 = 2 + 2 + 1.
    assert asked == [(2, None), (2, "b"), (2, "d")]


def test_prune_with_a_template_into_a_store_keeps_the_preamble(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # CHANGELOG: prune --template -o writes the conversation once pruned, "to a file or a
    # store": the greeting before the first user message is not sent but stays. Under ChatML and
    # chars/4, 20 tokens keep only the latest turn (7 tokens; the first turn needs 15 more).
    greeted = [
        {"id": "msg-1", "role": "assistant", "content": "Hello!", "timestamp": 1},
        {"id": "msg-2", "role": "user", "content": "hi", "timestamp": 2},
        {"id": "msg-3", "role": "assistant", "content": "ok", "timestamp": 3},
        {"id": "msg-4", "role": "user", "content": "hi", "timestamp": 4},
    ]
    source = tmp_path / "greeted.json"
    source.write_text(json.dumps(greeted), encoding="utf-8")
    target = with_conversation(sqlite_url, "p")
    window = ["--max-context-tokens", "20", "--max-response-tokens", "0", "--template", "chatml"]
    assert main(["prune", str(source), *window, "-o", target]) == 0
    assert "wrote 2 messages to" in capsys.readouterr().out
    with open_store(sqlite_url) as store:
        assert [message.id for message in store.load("p")] == ["msg-1", "msg-4"]


def test_validate_names_a_store_s_entries_by_urls_that_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/cli.md: stores[].url is the URL "as its conversations' paths start", a row whose id
    # is not text is named by the store's URL, and a path reads back (a tab in the file name).
    tabbed = tmp_path / "a\tb.db"  # outside the f-string: no backslash there before 3.12
    url = f"sqlite:///{tabbed}"
    with open_store(url) as store:
        for name in ("c1", "c2"):
            store.create(name)
            store.append(name, Message.user("m1", "hi", timestamp=1))
    raw_sql(url, "UPDATE orion_conversations SET id = x'ff', created_ms = 1 WHERE id = 'c1'")
    assert main(["validate", url, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["stores"] == [{"url": url, "conversations": 2}]
    assert [entry["path"] for entry in report["files"]] == [url, f"{url}?conversation=c2"]
    assert main(["stats", report["files"][1]["path"]]) == 0


def test_rows_without_an_id_hide_no_conversation_from_validate(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite lets another program write NULL in the id column (a non-INTEGER primary key), which
    # compares as NULL: no page can start after it. docs/cli.md: every conversation is checked,
    # each such row one invalid entry named by the store's URL, before the others, which follow
    # by id ("#general" before "a", whatever their creation times), in pages of 2.
    monkeypatch.setattr(_store_cli, "PAGE_SIZE", 2)
    for name in ["a", "#general", "c"]:
        assert main(["convert", str(GOLDEN), with_conversation(sqlite_url, name)]) == 0
    raw_sql(sqlite_url, "UPDATE orion_conversations SET created_ms = 5")
    raw_sql(sqlite_url, "UPDATE orion_conversations SET created_ms = 1 WHERE id = 'a'")
    for _ in range(2):
        raw_sql(
            sqlite_url,
            "INSERT INTO orion_conversations (id, created_ms, updated_ms, message_count, next_position)"
            " VALUES (NULL, 5, 5, 0, 0)",
        )
    capsys.readouterr()
    assert main(["validate", "--format", "json", sqlite_url]) == 1
    report = json.loads(capsys.readouterr().out)
    paths = [entry["path"] for entry in report["files"]]
    store = masked_url(sqlite_url)
    assert paths == [store, store, *(with_conversation(store, name) for name in ["%23general", "a", "c"])]
    assert [entry["valid"] for entry in report["files"]] == [False, False, True, True, True]


def test_a_row_with_an_empty_id_is_one_invalid_entry(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/cli.md: a row another program wrote stops nothing; an id no operation takes ("")
    # is one invalid entry named by the store's URL, and the others are checked.
    assert main(["convert", str(GOLDEN), with_conversation(sqlite_url, "a")]) == 0
    raw_sql(
        sqlite_url,
        "INSERT INTO orion_conversations (id, created_ms, updated_ms, message_count, next_position)"
        " VALUES ('', 0, 0, 0, 0)",
    )
    capsys.readouterr()
    assert main(["validate", sqlite_url]) == 1
    store = masked_url(sqlite_url)
    assert capsys.readouterr().out.splitlines() == [
        f"{store}: a stored conversation's id is empty text",
        "checked 2 stored conversations (6 messages in the valid ones): 1 invalid (1 error)",
    ]


@pytest.mark.parametrize(
    ("deleted", "listed"),
    [
        (["b"], ["a", "b", "c", "d", "e", "f"]),  # the page's last
        (["a", "b"], ["a", "b", "c", "d", "e", "f"]),  # the whole page
        (["d"], ["a", "b", "c", "d", "e", "f"]),  # a later page's last
        (["c", "d", "e"], ["a", "b", "c", "d", "e", "f"]),  # a whole page and more
    ],
)
def test_the_listing_goes_on_when_a_page_s_last_conversation_is_deleted(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, deleted: list[str], listed: list[str]
) -> None:
    # Deleted right after the page holding them is read, before the next page is asked for; a
    # conversation listed before its deletion stays listed (validate then reports it missing).
    monkeypatch.setattr(_store_cli, "PAGE_SIZE", 2)
    reading = ConversationStore.conversation_ids

    def deleting(
        store: ConversationStore, *, limit: int | None = None, after: str | None = None
    ) -> list[str]:
        page = reading(store, limit=limit, after=after)
        for identifier in page:
            if identifier in deleted:
                store.delete(identifier)
        return page

    with open_store(sqlite_url) as store:
        for name in "abcdef":
            store.create(name)
        monkeypatch.setattr(ConversationStore, "conversation_ids", deleting)
        assert _store_cli._conversation_ids(store) == listed
        monkeypatch.undo()
        assert [info.id for info in store.conversations()] == [n for n in "abcdef" if n not in deleted]


def test_the_command_line_reads_a_store_through_its_public_calls_only() -> None:
    # It listed validate's ids through the store's private operation runner (store._backend).
    source = inspect.getsource(_store_cli)
    assert "._backend" not in source
    assert "from ._store_ops import checked_id\n" in source  # the id rule, no operation


# --------------------------------------------------------------------------------------------
# list


def make_listed(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three conversations created at chosen clocks: an escaped title, none, and one with messages."""
    with open_store(store_url) as store:
        for name, clock, title in (
            ("chat-b", 1_765_000_000_000, "Plans\x1b[31m\nfor today"),
            ("a", 1_765_000_000_000, None),
            ("c1", 1_765_000_060_000, "Tool loop"),
        ):
            with monkeypatch.context() as patch:
                patch.setattr(_store_ops, "now_ms", lambda clock=clock: clock)
                store.create(name, title=title, metadata={"big": 2**64} if name == "c1" else None)
    with monkeypatch.context() as patch:
        patch.setattr(_store_ops, "now_ms", lambda: 1_765_000_120_500)
        assert main(["convert", str(GOLDEN), with_conversation(store_url, "c1")]) == 0


def test_list_shows_each_conversation_oldest_first(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_listed(store_url, monkeypatch)
    capsys.readouterr()
    assert main(["list", store_url]) == 0
    # 1,765,000,000,000 ms is 2025-12-06T05:46:40Z; the golden holds 6 messages.
    assert capsys.readouterr().out.splitlines() == [
        "ID      MESSAGES  CREATED (UTC)             UPDATED (UTC)             TITLE",
        "a              0  2025-12-06T05:46:40.000Z  2025-12-06T05:46:40.000Z",
        "chat-b         0  2025-12-06T05:46:40.000Z  2025-12-06T05:46:40.000Z  Plans\\x1b[31m\\nfor today",
        "c1             6  2025-12-06T05:47:40.000Z  2025-12-06T05:48:40.500Z  Tool loop",
        f"3 conversations in {masked_url(store_url)}",
    ]


def test_list_lines_up_wide_and_combining_characters(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store_ops, "now_ms", lambda: 1_765_000_000_000)
    with open_store(sqlite_url) as store:
        for name in ("\u4f1a\u8a71", "e\u0301t\u00e9", "abcdef"):  # 会話 (4 columns), e+acute t é (3), 6
            store.create(name, title="t")
    capsys.readouterr()
    assert main(["list", sqlite_url]) == 0
    when = "2025-12-06T05:46:40.000Z"
    assert capsys.readouterr().out.splitlines()[:4] == [
        "ID      MESSAGES  CREATED (UTC)             UPDATED (UTC)             TITLE",
        f"abcdef         0  {when}  {when}  t",  # created together: listed by id
        f"e\u0301t\u00e9            0  {when}  {when}  t",
        f"\u4f1a\u8a71           0  {when}  {when}  t",
    ]


@pytest.mark.parametrize(
    ("text", "columns"),
    [
        # Worked out by hand from the Unicode categories (wcwidth agrees): a letter takes one
        # column, a nonspacing mark (Mn) none, though its combining class is 0 for most of these.
        ("\u0939\u093f\u0902\u0926\u0940", 4),  # हिंदी: HA, I (Mc), ANUSVARA (Mn), DA, II (Mc)
        ("\u0915\u0941", 1),  # कु: KA, VOWEL SIGN U (Mn)
        ("\u0e01\u0e31\u0e49\u0e19", 2),  # กั้น: KO KAI, MAI HAN-AKAT (Mn), MAI THO (Mn), NO NU
        ("a\u034fb", 2),  # COMBINING GRAPHEME JOINER (Mn, class 0) between two letters
        ("a\u20dd", 1),  # COMBINING ENCLOSING CIRCLE (Me)
        ("\u1100\u1161\u11a8", 2),  # a Hangul syllable in jamo: wide KIYEOK, then medial A, final KIYEOK
        ("e\u0301", 1),  # a combining accent, as before
        ("\u4f1a", 2),  # 会: wide
        # VARIATION SELECTOR-16 (Mn) draws a narrow symbol as a two-column emoji (wcwidth agrees);
        # after a wide one it adds nothing.
        ("\u2764\ufe0f", 2),  # ❤️
        ("\U0001f600\ufe0f", 2),  # 😀 is wide already
        ("1\ufe0f\u20e3", 2),  # the keycap 1️⃣
        ("a\ufe0f", 1),  # a letter has no emoji form
        ("\u00e9\ufe0f\u20ac\ufe0f", 2),  # nor do é and € (a currency sign)
        ("\u00a9\ufe0f\ufe0f", 2),  # ©️: a repeated selector adds nothing
        ("\u2194\ufe0f", 2),  # ↔️: an emoji, though a math symbol (Sm)
        ("\u302e\uac00", 2),  # a tone mark (Mc, combining class 224) on a wide syllable
        (
            "\U0001d165",
            0,
        ),  # MUSICAL SYMBOL COMBINING STEM (Mc, class 216; Unicode 3.1, in every Python's tables)
        ("\u1100\ud7b0", 2),  # wide KIYEOK, then a medial jamo of Jamo Extended-B
    ],
)
def test_display_width_gives_marks_and_medial_jamo_no_column(text: str, columns: int) -> None:
    assert display_width(text) == columns


def test_list_lines_up_devanagari_and_thai_ids(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The MESSAGES column started one column early after these ids (each counted a column wider).
    monkeypatch.setattr(_store_ops, "now_ms", lambda: 1_765_000_000_000)
    hindi, thai = "\u0939\u093f\u0902\u0926\u0940", "\u0e01\u0e31\u0e49\u0e19"  # 4 and 2 columns
    with open_store(sqlite_url) as store:
        for name in (hindi, thai, "plain"):
            store.create(name, title="t")
    capsys.readouterr()
    assert main(["list", sqlite_url]) == 0
    when = "2025-12-06T05:46:40.000Z"
    # The ID column is 5 wide ("plain"), then two spaces and MESSAGES right-aligned in 8.
    assert capsys.readouterr().out.splitlines()[1:4] == [
        f"plain{' ' * 9}0  {when}  {when}  t",  # created together: listed by id
        f"{hindi}{' ' * 10}0  {when}  {when}  t",
        f"{thai}{' ' * 12}0  {when}  {when}  t",
    ]


def test_list_as_json_adds_the_metadata(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_listed(store_url, monkeypatch)
    capsys.readouterr()
    assert main(["list", "--format", "json", store_url]) == 0
    listed = json.loads(capsys.readouterr().out)
    urls = [conversation.pop("url") for conversation in listed["conversations"]]
    assert urls == [with_conversation(masked_url(store_url), name) for name in ("a", "chat-b", "c1")]
    assert listed == {
        "store": masked_url(store_url),
        "conversations": [
            {"id": "a", "title": None, "metadata": None, "created": 1_765_000_000_000,
             "updated": 1_765_000_000_000, "message_count": 0},
            {"id": "chat-b", "title": "Plans\x1b[31m\nfor today", "metadata": None,
             "created": 1_765_000_000_000, "updated": 1_765_000_000_000, "message_count": 0},
            {"id": "c1", "title": "Tool loop", "metadata": {"big": 2**64}, "created": 1_765_000_060_000,
             "updated": 1_765_000_120_500, "message_count": 6},
        ],
    }  # fmt: skip


def test_list_reads_a_store_a_page_at_a_time(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store_cli, "PAGE_SIZE", 2)
    with open_store(sqlite_url) as store:
        for name in "abcde":  # created in this order: the listing's order
            store.create(name)
    assert main(["list", "--format", "json", sqlite_url]) == 0
    assert [c["id"] for c in json.loads(capsys.readouterr().out)["conversations"]] == list("abcde")


def test_list_as_json_gives_urls_that_read_back_whatever_the_file_s_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # JSON escapes a TAB itself: the url holds the TAB, not the two characters "\\t" that the
    # terminal's line shows for it.
    url = "sqlite:///" + str(tmp_path / "odd\tname.db")
    with open_store(url) as store:
        store.create("c1")
        store.append("c1", Message.user("msg-1", "hi", timestamp=1))
    assert main(["list", "--format", "json", url]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["store"], [c["url"] for c in listed["conversations"]]) == (url, [f"{url}?conversation=c1"])
    assert main(["stats", "--format", "json", listed["conversations"][0]["url"]]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 1
    assert main(["list", url]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"1 conversation in sqlite:///{tmp_path}/odd\\tname.db"


def test_list_as_json_masks_the_password_in_every_url(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(postgres_url) as store:
        store.create("c1")
    secret = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:hunter22@", 1)
    assert main(["list", "--format", "json", secret]) == 0
    out = capsys.readouterr().out
    assert "hunter22" not in out
    masked = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:***@", 1)
    assert [c["url"] for c in json.loads(out)["conversations"]] == [f"{masked}&conversation=c1"]


def test_list_of_an_empty_store_says_so(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    open_store(sqlite_url).close()
    assert main(["list", sqlite_url]) == 0
    assert capsys.readouterr().out.splitlines() == [f"0 conversations in {sqlite_url}"]


def test_list_refuses_what_is_not_a_whole_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.db"
    assert main(["list", f"sqlite:///{missing}"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"orion-messages: error: {missing}: no such store database; nothing was created"
    ]
    assert not missing.exists()
    wanted = "a store URL, sqlite:///PATH or postgresql://USER@HOST/DB, without ?conversation="
    assert main(["list", str(GOLDEN)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"orion-messages list: error: {GOLDEN} is not {wanted}"
    store = tmp_path / "chats.db"
    open_store(f"sqlite:///{store}").close()
    assert main(["list", f"sqlite:///{store}?conversation=c1"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"orion-messages list: error: sqlite:///{store}?conversation=c1 names a conversation; list takes {wanted}"
    )


def test_an_id_that_a_url_must_encode_is_listed_with_the_url_that_reads_it(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(sqlite_url) as store:
        store.create("a b")
        store.create("a+b")
        store.append("a+b", Message.user("msg-1", "plus", timestamp=1))
    assert main(["list", "--format", "json", sqlite_url]) == 0
    urls = {c["id"]: c["url"] for c in json.loads(capsys.readouterr().out)["conversations"]}
    assert urls == {"a b": f"{sqlite_url}?conversation=a%20b", "a+b": f"{sqlite_url}?conversation=a%2Bb"}
    assert main(["convert", urls["a+b"], "-", "--to", "jsonl"]) == 0  # the URL reads that one back
    assert json.loads(capsys.readouterr().out)["content"] == "plus"


# Values another program put in a conversation's row (SQLite keeps any type in any column).
FOREIGN_ROWS = [
    ("title = x'c3'", "conversation \"a\": its title is a bytes b'\\xc3', not text"),
    ("message_count = 1.5", "conversation \"a\": its message_count is a float 1.5, not an integer"),
    ("created_ms = 'soon'", "conversation \"a\": its created_ms is a str \"soon\", not an integer"),
    ("metadata = '{bad'", "conversation \"a\": its metadata is not JSON text (Expecting property name "
     "enclosed in double quotes: line 1 column 2 (char 1))"),
    ("id = x'ff'", "a stored conversation's id is a bytes b'\\xff', not text"),
    # A text that is not UTF-8 failed the listing with sqlite3's OperationalError.
    ("title = CAST(x'c3' AS TEXT)", "conversation \"a\": its title is text whose bytes b'\\xc3' are not UTF-8"),
    ("id = CAST(x'ff' AS TEXT)", "a stored conversation's id is text whose bytes b'\\xff' are not UTF-8"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "said"), FOREIGN_ROWS)
def test_a_row_orion_messages_did_not_write_is_one_error_line(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], change: str, said: str
) -> None:
    with open_store(sqlite_url) as store:
        store.create("a", title="first")
        store.create("b")
    raw_sql(sqlite_url, f"UPDATE orion_conversations SET {change} WHERE id = 'a'")
    where = parse_store_url(sqlite_url).database  # a SQLite store is named by its file
    for command in (["list", sqlite_url], ["list", "--format", "json", sqlite_url]):
        assert main(command) == 1
        captured = capsys.readouterr()
        assert (captured.out, captured.err.splitlines()) == ("", [f"orion-messages: error: {where}: {said}"])
    # The library's own error names the store too (docs/store.md), as the command line does.
    with (
        open_store(sqlite_url) as store,
        pytest.raises(StoreError, match=f"^{re.escape(f'{where}: {said}')}$"),
    ):
        store.conversations()


@pytest.mark.parametrize("change", [change for change, _ in FOREIGN_ROWS if not change.startswith("id ")])
def test_validate_checks_every_conversation_whatever_its_title_or_metadata_hold(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    # validate needs a conversation's id and messages only: another program's title, metadata,
    # created_ms or message_count stops neither the store's other conversations nor other inputs.
    with open_store(sqlite_url) as store:
        store.create("a")
        store.extend(
            "a", [Message.user("msg-1", "hi", timestamp=1), Message.user("msg-1", "yo", timestamp=2)]
        )
        store.create("b")
        store.extend(
            "b", [Message.user("msg-1", "hi", timestamp=1), Message.user("msg-2", "yo", timestamp=2)]
        )
    raw_sql(
        sqlite_url,
        "UPDATE orion_messages SET data = '{not json' WHERE conversation_id = 'b' AND id = 'msg-2'",
    )
    raw_sql(sqlite_url, f"UPDATE orion_conversations SET {change} WHERE id = 'a'")
    other = tmp_path / "other.json"
    other.write_text('[{"id":"m","role":"user","content":"hi","timestamp":1}]', encoding="utf-8")
    assert main(["validate", sqlite_url, str(other)]) == 1
    captured = capsys.readouterr()
    a, b = (f"{sqlite_url}?conversation={name}" for name in "ab")
    expected = [
        f'{a}: [1].id: warning: duplicate message id "msg-1" (first at [0])',
        f'{b}: conversation "b", position 1: line 1, column 2: malformed JSON: expected an object key (a string)',
    ]  # by id, whatever created_ms holds
    summary = "checked 2 stored conversations and 1 file (3 messages in the valid ones): 1 invalid (1 error), 1 warning"
    assert (captured.err, captured.out.splitlines()) == ("", [*expected, summary])


def test_validate_reports_a_row_whose_id_is_not_text_and_goes_on(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(sqlite_url) as store:
        for name in "ab":
            store.create(name)
            store.append(name, Message.user("msg-1", "hi", timestamp=1))
    raw_sql(
        sqlite_url, "UPDATE orion_conversations SET id = x'ff', created_ms = 1 WHERE id = 'a'"
    )  # listed first
    assert main(["validate", "--format", "json", sqlite_url]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["valid"], f["messages"]) for f in report["files"]] == [
        (sqlite_url, False, None),
        (f"{sqlite_url}?conversation=b", True, 1),
    ]
    assert [e["message"] for e in report["files"][0]["errors"]] == [
        "a stored conversation's id is a bytes b'\\xff', not text"
    ]


def test_prune_reads_and_writes_a_store_as_it_does_files(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same conversation from a file and from a store prunes the same; -o into a store URL
    # holds what -o into a file holds.
    golden = FIXTURES / "v0.7" / "edge-unicode-escapes.json"  # 5 turns, 7 messages
    source = with_conversation(store_url, "c1")
    assert main(["convert", str(golden), source]) == 0
    window = ["--max-context-tokens", "60", "--max-response-tokens", "0"]  # keeps 2 turns of 5
    from_file = tmp_path / "pruned.json"
    assert main(["prune", str(golden), *window, "-o", str(from_file)]) == 0
    capsys.readouterr()
    assert main(["prune", source, *window, "--format", "json"]) == 0
    plan_from_store = json.loads(capsys.readouterr().out)
    assert main(["prune", str(golden), *window, "--format", "json"]) == 0
    assert plan_from_store == {**json.loads(capsys.readouterr().out), "path": source}
    assert main(["prune", source, *window, "-o", with_conversation(store_url, "c2")]) == 0
    with open_store(store_url) as store:
        assert store.load("c2") == load(from_file)
        assert len(store.load("c2")) < len(store.load("c1"))


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", str(GOLDEN), "sqlite://?conversation=c"],  # would report "wrote" and lose it all
        ["convert", "sqlite://?conversation=c", "out.json"],
        ["list", "sqlite://"],
        ["validate", "sqlite://"],
        ["stats", "sqlite:///:memory:?conversation=c"],
        [
            "prune",
            "sqlite://?conversation=c",
            "--max-context-tokens",
            "100",
            "-o",
            "sqlite://?conversation=d",
        ],
    ],
)
def test_the_command_line_refuses_an_in_memory_store(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "an in-memory store lives only as long as one process" in captured.err
    assert "Traceback" not in captured.err
    assert "wrote" not in captured.out + captured.err
    assert list(tmp_path.iterdir()) == []
