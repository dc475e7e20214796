# ruff: noqa: E501  (one line per phrase, on purpose)
"""The runtime's own words to the reader, one table per language: the refusal, the line
that frames passages as quotes, and the progress lines a turn streams.

The widget sends the page's language (`lang` in the ask request, from `<html lang>` or
the owner's `language` option); the turn and static mode pick the table with
`framing_for`, so a Japanese page gets Japanese framing from the server and in the
browser alike. The widget's own interface strings are its tables in `widget/i18n/`.
Pure Python (static mode runs it in Pyodide).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

__all__ = ["ENGLISH", "FRAMINGS", "LANG_TAG", "MAX_LANG_CHARS", "Framing", "framing_for"]

# A BCP 47 tag as `<html lang>` carries it ("ja", "pt-BR", "zh-Hant-TW"); the ask
# request's `lang` must match it (at most MAX_LANG_CHARS characters).
LANG_TAG = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8}){0,4}")
MAX_LANG_CHARS = 35


@dataclass(frozen=True)
class Framing:
    """One language's table. `{site}`, `{n}`, `{query}`, `{title}` and `{tool}` are
    filled with plain text (the callers keep docs text as text nodes)."""

    refusal: str  # the refusal's first paragraph
    closest: str  # leads the list of closest pages
    passages: str  # the line before the quoted excerpts of a `passages` answer
    found_one: str
    found: str  # {n} results, n != 1
    not_covered: str  # progress when the gate refuses
    writing: str
    searching_for: str
    searching: str
    reading: str
    listing: str
    site_tool: str
    tool: str
    another_model: str

    def found_results(self, n: int) -> str:
        return self.found_one if n == 1 else self.found.format(n=n)


ENGLISH = Framing(
    refusal="The {site} documentation does not seem to cover this, so I won't guess.",
    closest="These pages are the closest matches:",
    passages="Quoted from the sections of the docs closest to your question:",
    found_one="Found 1 result",
    found="Found {n} results",
    not_covered="No section of the documentation covers this closely",
    writing="Writing the answer",
    searching_for="Searching for “{query}”",
    searching="Searching the docs",
    reading="Reading {title}",
    listing="Listing the pages",
    site_tool="Asking the site's {tool} tool",
    tool="Checking a tool",
    another_model="Trying another model",
)

FRAMINGS: dict[str, Framing] = {
    "en": ENGLISH,
    "de": Framing(
        refusal="Die Dokumentation von {site} scheint das nicht abzudecken, daher rate ich nicht.",
        closest="Diese Seiten kommen der Frage am nächsten:",
        passages="Zitate aus den Abschnitten der Dokumentation, die Ihrer Frage am nächsten kommen:",
        found_one="1 Treffer gefunden",
        found="{n} Treffer gefunden",
        not_covered="Kein Abschnitt der Dokumentation behandelt das genau",
        writing="Die Antwort wird geschrieben",
        searching_for="Suche nach „{query}“",
        searching="Die Dokumentation wird durchsucht",
        reading="Lese {title}",
        listing="Die Seiten werden aufgelistet",
        site_tool="Frage das Werkzeug {tool} der Website",
        tool="Prüfe ein Werkzeug",
        another_model="Versuche ein anderes Modell",
    ),
    "fr": Framing(
        refusal="La documentation de {site} ne semble pas traiter ce sujet : je préfère ne pas deviner.",
        closest="Voici les pages les plus proches :",
        passages="Extraits cités des sections de la documentation les plus proches de votre question :",
        found_one="1 résultat trouvé",
        found="{n} résultats trouvés",
        not_covered="Aucune section de la documentation ne traite précisément ce sujet",
        writing="Rédaction de la réponse",
        searching_for="Recherche de « {query} »",
        searching="Recherche dans la documentation",
        reading="Lecture de {title}",
        listing="Liste des pages",
        site_tool="Interrogation de l’outil {tool} du site",
        tool="Vérification d’un outil",
        another_model="Essai d’un autre modèle",
    ),
    "es": Framing(
        refusal="La documentación de {site} no parece tratar esto, así que no voy a adivinar.",
        closest="Estas son las páginas más cercanas:",
        passages="Citas de las secciones de la documentación más cercanas a tu pregunta:",
        found_one="1 resultado encontrado",
        found="{n} resultados encontrados",
        not_covered="Ninguna sección de la documentación trata esto de cerca",
        writing="Redactando la respuesta",
        searching_for="Buscando «{query}»",
        searching="Buscando en la documentación",
        reading="Leyendo {title}",
        listing="Listando las páginas",
        site_tool="Consultando la herramienta {tool} del sitio",
        tool="Comprobando una herramienta",
        another_model="Probando otro modelo",
    ),
    "pt": Framing(
        refusal="A documentação de {site} não parece tratar disso, então não vou adivinhar.",
        closest="Estas são as páginas mais próximas:",
        passages="Citações das seções da documentação mais próximas da sua pergunta:",
        found_one="1 resultado encontrado",
        found="{n} resultados encontrados",
        not_covered="Nenhuma seção da documentação trata disso de perto",
        writing="Escrevendo a resposta",
        searching_for="Procurando “{query}”",
        searching="Procurando na documentação",
        reading="Lendo {title}",
        listing="Listando as páginas",
        site_tool="Consultando a ferramenta {tool} do site",
        tool="Verificando uma ferramenta",
        another_model="Tentando outro modelo",
    ),
    "it": Framing(
        refusal="La documentazione di {site} non sembra trattare questo argomento, quindi non tiro a indovinare.",
        closest="Queste sono le pagine più vicine:",
        passages="Citazioni dalle sezioni della documentazione più vicine alla tua domanda:",
        found_one="1 risultato trovato",
        found="{n} risultati trovati",
        not_covered="Nessuna sezione della documentazione tratta questo da vicino",
        writing="Scrittura della risposta",
        searching_for="Ricerca di «{query}»",
        searching="Ricerca nella documentazione",
        reading="Lettura di {title}",
        listing="Elenco delle pagine",
        site_tool="Consultazione dello strumento {tool} del sito",
        tool="Verifica di uno strumento",
        another_model="Prova con un altro modello",
    ),
    "ja": Framing(
        refusal="{site} のドキュメントにはこの内容が書かれていないようです。推測で答えることはしません。",
        closest="関連の近いページ:",
        passages="ご質問に最も近いドキュメントのセクションからの引用です:",
        found_one="1 件見つかりました",
        found="{n} 件見つかりました",
        not_covered="この内容を直接扱うセクションはドキュメントにありません",
        writing="回答を書いています",
        searching_for="「{query}」を検索しています",
        searching="ドキュメントを検索しています",
        reading="{title} を読んでいます",
        listing="ページの一覧を取得しています",
        site_tool="サイトのツール {tool} に問い合わせています",
        tool="ツールを確認しています",
        another_model="別のモデルを試しています",
    ),
    "zh": Framing(
        refusal="{site} 文档似乎没有涉及这个问题，所以我不做猜测。",
        closest="以下页面最为接近：",
        passages="以下引用自与你的问题最接近的文档章节：",
        found_one="找到 1 个结果",
        found="找到 {n} 个结果",
        not_covered="文档中没有章节直接涉及这个问题",
        writing="正在撰写回答",
        searching_for="正在搜索“{query}”",
        searching="正在搜索文档",
        reading="正在阅读 {title}",
        listing="正在列出页面",
        site_tool="正在询问网站的 {tool} 工具",
        tool="正在检查工具",
        another_model="正在尝试另一个模型",
    ),
    "ko": Framing(
        refusal="{site} 문서에서는 이 내용을 다루지 않는 것 같아 추측으로 답하지 않겠습니다.",
        closest="가장 가까운 페이지:",
        passages="질문과 가장 가까운 문서 섹션에서 인용한 내용입니다:",
        found_one="결과 1개를 찾았습니다",
        found="결과 {n}개를 찾았습니다",
        not_covered="이 내용을 직접 다루는 문서 섹션이 없습니다",
        writing="답변을 작성하는 중",
        searching_for="“{query}” 검색 중",
        searching="문서를 검색하는 중",
        reading="{title} 읽는 중",
        listing="페이지 목록을 가져오는 중",
        site_tool="사이트의 {tool} 도구에 묻는 중",
        tool="도구를 확인하는 중",
        another_model="다른 모델을 시도하는 중",
    ),
    "hi": Framing(
        refusal="{site} के दस्तावेज़ में यह विषय शामिल नहीं लगता, इसलिए मैं अनुमान नहीं लगाऊँगा।",
        closest="ये पेज सबसे नज़दीक हैं:",
        passages="आपके प्रश्न के सबसे नज़दीकी दस्तावेज़ खंडों से उद्धरण:",
        found_one="1 परिणाम मिला",
        found="{n} परिणाम मिले",
        not_covered="दस्तावेज़ का कोई भी खंड इस विषय को सीधे नहीं बताता",
        writing="उत्तर लिखा जा रहा है",
        searching_for="“{query}” खोजा जा रहा है",
        searching="दस्तावेज़ में खोज जारी है",
        reading="{title} पढ़ा जा रहा है",
        listing="पेजों की सूची बनाई जा रही है",
        site_tool="साइट के {tool} टूल से पूछा जा रहा है",
        tool="एक टूल जाँचा जा रहा है",
        another_model="दूसरा मॉडल आज़माया जा रहा है",
    ),
}

FIELDS = tuple(f.name for f in fields(Framing))


def framing_for(lang: str | None) -> Framing:
    """The table for a page language: "pt-BR" tries pt-br, then pt; unknown or absent
    languages get English."""
    code = (lang or "").lower().replace("_", "-")
    for candidate in (code, code.split("-")[0]):
        if candidate in FRAMINGS:
            return FRAMINGS[candidate]
    return ENGLISH
