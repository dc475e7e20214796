"""Stage 2 of a turn: purely social inputs are answered from a template, nothing else is."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from docpilot_runtime.screen.social import (
    DEFAULT_TEMPLATES,
    MAX_SOCIAL_CHARS,
    Role,
    SocialReply,
    _build_inventory,
    match_social,
)

SITE = "Acme Docs"

# (input, intent, language of the reply)
SOCIAL_INPUTS: list[tuple[str, str, str]] = [
    # English: greetings, with case, punctuation, emoji, elongation and addressees
    ("Hello", "greeting", "en"),
    ("hi", "greeting", "en"),
    ("hiii", "greeting", "en"),
    ("HEYYY!!!", "greeting", "en"),
    ("hey there", "greeting", "en"),
    ("Hi there! 👋", "greeting", "en"),
    ("good morning", "greeting", "en"),
    ("goood morning :)", "greeting", "en"),
    ("Good evening everyone", "greeting", "en"),
    ("What's up?", "greeting", "en"),
    ("whats up", "greeting", "en"),
    ("howdy", "greeting", "en"),
    ("how are you?", "greeting", "en"),
    ("hello DocPilot", "greeting", "en"),
    ("hey doc pilot", "greeting", "en"),
    ("hi Acme Docs!", "greeting", "en"),
    ("is anyone there?", "greeting", "en"),
    ("hello, I have a question", "greeting", "en"),
    ("👋", "greeting", "en"),
    # English: thanks
    ("thanks", "thanks", "en"),
    ("thx!!", "thanks", "en"),
    ("thanks a lot 🙏", "thanks", "en"),
    ("ty", "thanks", "en"),
    ("tysm", "thanks", "en"),
    ("cheers", "thanks", "en"),
    ("Thank you so much!", "thanks", "en"),
    ("thank you very much", "thanks", "en"),
    ("thanks bot", "thanks", "en"),
    ("Thanks for your help!", "thanks", "en"),
    ("great, thanks!", "thanks", "en"),
    ("ok got it, thanks", "thanks", "en"),
    ("thanks again", "thanks", "en"),
    ("much appreciated", "thanks", "en"),
    ("that was helpful", "thanks", "en"),
    ("thankssss", "thanks", "en"),
    ("❤️ thanks", "thanks", "en"),
    ("🙏", "thanks", "en"),
    # English: farewells
    ("bye", "farewell", "en"),
    ("byeee", "farewell", "en"),
    ("bye for now", "farewell", "en"),
    ("goodbye!", "farewell", "en"),
    ("see you later", "farewell", "en"),
    ("cya", "farewell", "en"),
    ("take care", "farewell", "en"),
    ("ok thanks, bye", "farewell", "en"),
    ("thanks! bye", "farewell", "en"),
    ("that's all, thanks", "farewell", "en"),
    ("have a nice day", "farewell", "en"),
    # English: identity
    ("who are you?", "identity", "en"),
    ("Who are you??", "identity", "en"),
    ("what can you do?", "identity", "en"),
    ("hi, who are you?", "identity", "en"),
    ("hello! what can you help me with?", "identity", "en"),
    ("are you a bot?", "identity", "en"),
    ("tell me about yourself", "identity", "en"),
    ("who r u", "identity", "en"),
    ("Hi! Are you a real person?", "identity", "en"),
    # Spanish
    ("¡Hola!", "greeting", "es"),
    ("holaaa", "greeting", "es"),
    ("buenos días", "greeting", "es"),
    ("buenos dias", "greeting", "es"),
    ("muchas gracias", "thanks", "es"),
    ("gracias por tu ayuda", "thanks", "es"),
    ("adiós", "farewell", "es"),
    ("hasta luego", "farewell", "es"),
    ("¿Quién eres?", "identity", "es"),
    ("hola, ¿qué puedes hacer?", "identity", "es"),
    # French
    ("Bonjour !", "greeting", "fr"),
    ("salut", "greeting", "fr"),
    ("merci beaucoup", "thanks", "fr"),
    ("merci à vous", "thanks", "fr"),
    ("au revoir", "farewell", "fr"),
    ("à bientôt", "farewell", "fr"),
    ("qui es-tu ?", "identity", "fr"),
    ("qu'est-ce que tu peux faire ?", "identity", "fr"),
    # German
    ("Hallo!", "greeting", "de"),
    ("guten Morgen", "greeting", "de"),
    ("Moin", "greeting", "de"),
    ("Danke schön!", "thanks", "de"),
    ("vielen Dank für die Hilfe", "thanks", "de"),
    ("Tschüß", "farewell", "de"),
    ("tschuess", "farewell", "de"),
    ("auf Wiedersehen", "farewell", "de"),
    ("Wer bist du?", "identity", "de"),
    ("was kannst du?", "identity", "de"),
    # Portuguese
    ("Olá", "greeting", "pt"),
    ("oi, tudo bem?", "greeting", "pt"),
    ("muito obrigado", "thanks", "pt"),
    ("valeu!", "thanks", "pt"),
    ("tchau", "farewell", "pt"),
    ("até logo", "farewell", "pt"),
    ("quem é você?", "identity", "pt"),
    ("o que você pode fazer?", "identity", "pt"),
    # Italian, Dutch, Russian, Korean
    ("ciao", "greeting", "it"),
    ("grazie mille", "thanks", "it"),
    ("arrivederci", "farewell", "it"),
    ("chi sei?", "identity", "it"),
    ("hoi", "greeting", "nl"),
    ("dank je wel", "thanks", "nl"),
    ("hallo, dank je", "thanks", "nl"),
    ("tot ziens", "farewell", "nl"),
    ("wie ben jij?", "identity", "nl"),
    ("Привет!", "greeting", "ru"),
    ("спасибо большое", "thanks", "ru"),
    ("до свидания", "farewell", "ru"),
    ("кто ты?", "identity", "ru"),
    ("안녕하세요", "greeting", "ko"),
    ("감사합니다!", "thanks", "ko"),
    ("안녕히 계세요", "farewell", "ko"),
    ("누구세요?", "identity", "ko"),
    # Hindi in Devanagari
    ("नमस्ते", "greeting", "hi"),
    ("नमस्ते जी", "greeting", "hi"),
    ("धन्यवाद!", "thanks", "hi"),
    ("बहुत शुक्रिया", "thanks", "hi"),
    ("अलविदा", "farewell", "hi"),
    ("आप कौन हैं?", "identity", "hi"),
    ("आप क्या कर सकते हैं?", "identity", "hi"),
    # Hinglish (romanised Hindi)
    ("namaste", "greeting", "hi-Latn"),
    ("Namaste ji!", "greeting", "hi-Latn"),
    ("hello ji", "greeting", "hi-Latn"),
    ("shukriya", "thanks", "hi-Latn"),
    ("dhanyavaad", "thanks", "hi-Latn"),
    ("bahut shukriya bhai", "thanks", "hi-Latn"),
    ("phir milenge", "farewell", "hi-Latn"),
    ("aap kaun ho?", "identity", "hi-Latn"),
    ("kya kar sakte ho", "identity", "hi-Latn"),
    ("hi, aap kaun ho?", "identity", "hi-Latn"),
    # Chinese, simplified and traditional
    ("你好", "greeting", "zh"),
    ("你好！", "greeting", "zh"),
    ("您好 DocPilot", "greeting", "zh"),
    ("谢谢", "thanks", "zh"),
    ("好的，谢谢！", "thanks", "zh"),
    ("謝謝", "thanks", "zh-Hant"),
    ("再见", "farewell", "zh"),
    ("再見", "farewell", "zh-Hant"),
    ("你是谁？", "identity", "zh"),
    ("你是誰", "identity", "zh-Hant"),
    ("你好，你能做什么？", "identity", "zh"),
    # Japanese
    ("こんにちは", "greeting", "ja"),
    ("おはようございます", "greeting", "ja"),
    ("ありがとう", "thanks", "ja"),
    ("ありがとうございます！", "thanks", "ja"),
    ("DocPilotさん、ありがとうー", "thanks", "ja"),
    ("さようなら", "farewell", "ja"),
    ("あなたは誰？", "identity", "ja"),
    ("何ができますか？", "identity", "ja"),
]

NOT_SOCIAL_INPUTS: list[str] = [
    # social words carrying a subject
    "hi, how do I authenticate?",
    "thanks, but what about webhooks?",
    "hello world example",
    "hello world",
    "what can you do with plugins?",
    "who are the maintainers?",
    "who are you supposed to contact for billing?",
    "what are your rate limits?",
    "hey, where is the config file?",
    "good morning, the build fails with exit code 2",
    "thanks for the help with webhooks",
    "bye, one more thing: how do I rotate keys?",
    "how are you supposed to configure caching?",
    "can you help me set up SSO?",
    "i need help with the search plugin",
    "what is DocPilot?",
    "hello docpilot how do i install it",
    # technical words that look social
    "hello-world",
    "thanks.md",
    "goodbye page",
    "bye flag",
    "hi-res images",
    "HelloSign integration",
    "the cheers library",
    "greeting template",
    "welcome message",
    "later versions",
    "morning report cron",
    "hey.yaml",
    "ty-check",
    # content-free but not one of the four intents
    "ok",
    "bot",
    "DocPilot",
    "Acme Docs",
    "great",
    "yes",
    "help",
    "test",
    "",
    "   ",
    "?!",
    "🙂",
    # doc questions in other languages
    "hola, ¿cómo instalo el plugin?",
    "¿Qué puedes hacer con los plugins?",
    "gracias, pero ¿cómo configuro la búsqueda?",
    "Merci, mais comment configurer la recherche ?",
    "bonjour, où est le fichier de configuration ?",
    "Danke, aber wie konfiguriere ich das Theme?",
    "Hallo, wie installiere ich das Plugin?",
    "Obrigado, como faço o deploy?",
    "olá, como configuro a autenticação?",
    "ciao, come si installa il plugin?",
    "hallo, hoe installeer ik de plugin?",
    "привет, как настроить поиск?",
    "안녕하세요, 플러그인은 어떻게 설치하나요?",
    "नमस्ते, प्लगइन कैसे इंस्टॉल करें?",
    "धन्यवाद, लेकिन वेबहुक का क्या?",
    "namaste, plugin kaise install karein?",
    "shukriya, lekin webhook ka kya?",
    "aap kaun ho aur API key kahan milegi?",
    "你好，怎么安装插件？",
    "谢谢，那 webhook 呢？",
    "你是谁开发的插件",
    "你能做什么插件",
    "こんにちは、プラグインのインストール方法は？",
    "ありがとう、でも認証は？",
    "あなたは誰の設定を使いますか",
    # too long to be small talk even if every word is social
    "hi " * 30,
]


@pytest.mark.parametrize(("text", "intent", "language"), SOCIAL_INPUTS)
def test_social_input_is_answered_in_its_language_naming_the_site(
    text: str, intent: str, language: str
) -> None:
    reply = match_social(text, SITE)
    assert reply is not None, f"{text!r} should be social"
    assert (reply.intent, reply.language) == (intent, language)
    assert SITE in reply.markdown
    assert reply.markdown == DEFAULT_TEMPLATES[language][reply.intent].replace("{site}", SITE)


@pytest.mark.parametrize("text", NOT_SOCIAL_INPUTS)
def test_input_carrying_anything_but_social_phrases_is_not_claimed(text: str) -> None:
    assert match_social(text, SITE) is None


def test_case_lists_are_large_enough_to_pin_the_behaviour() -> None:
    assert len(SOCIAL_INPUTS) >= 80
    assert len(NOT_SOCIAL_INPUTS) >= 60
    covered = {language for _, _, language in SOCIAL_INPUTS}
    assert covered == set(DEFAULT_TEMPLATES)


def test_every_default_language_has_all_four_intents_naming_the_site() -> None:
    for language, by_intent in DEFAULT_TEMPLATES.items():
        assert set(by_intent) == {"greeting", "thanks", "farewell", "identity"}, language
        for intent, template in by_intent.items():
            assert "{site}" in template, (language, intent)


def test_input_over_the_length_limit_is_never_social() -> None:
    at_limit = "thanks " * (MAX_SOCIAL_CHARS // 7)
    assert len(at_limit.strip()) <= MAX_SOCIAL_CHARS
    assert match_social(at_limit, SITE) is not None
    assert match_social("thank you " * 9, SITE) is None


def test_reply_is_a_frozen_dataclass() -> None:
    reply = match_social("hi", SITE)
    assert reply is not None
    assert reply == SocialReply(
        intent="greeting",
        language="en",
        markdown=DEFAULT_TEMPLATES["en"]["greeting"].replace("{site}", SITE),
    )
    with pytest.raises(FrozenInstanceError):
        reply.intent = "thanks"  # type: ignore[misc]


def test_owner_template_overrides_that_language_and_intent_only() -> None:
    owner = {"en": {"greeting": "Welcome to **{site}**! Ask away."}}
    greeting = match_social("hello", SITE, owner)
    thanks = match_social("thanks", SITE, owner)
    spanish = match_social("hola", SITE, owner)
    assert greeting is not None and greeting.markdown == "Welcome to **Acme Docs**! Ask away."
    assert thanks is not None
    assert thanks.markdown == DEFAULT_TEMPLATES["en"]["thanks"].replace("{site}", SITE)
    assert spanish is not None
    assert spanish.markdown == DEFAULT_TEMPLATES["es"]["greeting"].replace("{site}", SITE)


def test_owner_template_for_another_language_is_used_for_that_language() -> None:
    owner = {"hi-Latn": {"thanks": "Koi baat nahi, {site} yahin hai."}}
    reply = match_social("shukriya", SITE, owner)
    assert reply is not None and reply.markdown == "Koi baat nahi, Acme Docs yahin hai."


def test_unknown_language_or_intent_keys_in_owner_templates_are_ignored() -> None:
    owner = {"xx": {"greeting": "nope"}, "en": {"greet": "nope"}}
    reply = match_social("hi", SITE, owner)
    assert reply is not None and "nope" not in reply.markdown


def test_braces_in_owner_template_are_plain_text() -> None:
    owner = {"en": {"greeting": "{site} {0} {site!r} {{site}} {unknown} {site.__class__}"}}
    reply = match_social("hi", SITE, owner)
    assert reply is not None
    assert reply.markdown == "Acme Docs {0} {site!r} {Acme Docs} {unknown} {site.__class__}"


def test_site_name_with_a_placeholder_is_not_substituted_twice() -> None:
    reply = match_social("hi", "{site} {0}", {"en": {"greeting": "I am {site}."}})
    assert reply is not None and reply.markdown == "I am {site} {0}."


def test_site_name_is_escaped_so_it_cannot_inject_markdown() -> None:
    reply = match_social("hi", "my_site *beta* <b>", {"en": {"greeting": "Hi from {site}"}})
    assert reply is not None
    assert reply.markdown == r"Hi from my\_site \*beta\* \<b\>"


def test_site_name_is_an_addressee_but_not_social_on_its_own() -> None:
    assert match_social("thanks, Hello Kitty Guide!", "Hello Kitty Guide") is not None
    assert match_social("Hello Kitty Guide", "Hello Kitty Guide") is None
    assert match_social("hello kitty", "Hello Kitty Guide") is None


def test_conflicting_roles_for_one_phrase_are_rejected_naming_the_phrase() -> None:
    phrases: dict[str, dict[Role, list[str]]] = {
        "en": {"greeting": ["yo", "hi"]},
        "xx": {"farewell": ["yo"]},
    }
    with pytest.raises(ValueError, match="'yo' is 'farewell' in xx but 'greeting'"):
        _build_inventory(phrases, {})


def test_phrase_of_only_punctuation_is_rejected() -> None:
    with pytest.raises(ValueError, match="normalises to nothing"):
        punctuation: dict[str, dict[Role, list[str]]] = {"en": {"greeting": ["hi", "?!"]}}
        _build_inventory(punctuation, {})


def test_the_phrase_file_is_checked_when_read(tmp_path: Path) -> None:
    from docpilot_runtime.screen.social import PHRASES_FILE, _load_tables

    data = json.loads(PHRASES_FILE.read_text(encoding="utf-8"))
    data["phrases"]["en"]["greting"] = ["hi"]
    bad = tmp_path / "social_phrases.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"social_phrases.json: phrases.en: expected roles"):
        _load_tables(bad)
