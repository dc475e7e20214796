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
    searching: str
    reading: str
    listing: str
    site_tool: str
    tool: str
    another_model: str
    credential: str  # {label}: the kind of secret recognised (a credential turn's reply)
    rotate_password: str  # the reply's second paragraph when it was a password
    rotate_key: str  # ... when it was a key or token
    english_docs: str  # after the refusal, when the question is not in the docs' English
    start_here: str  # leads the pages a refusal lists when no page shares a word with it

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
    searching="Searching the docs",
    reading="Reading {title}",
    listing="Listing the pages",
    site_tool="Asking the site's {tool} tool",
    tool="Checking a tool",
    another_model="Trying another model",
    credential="Your question seems to contain a secret (recognised: **{label}**), so it was not processed: nothing was searched, no model saw it, and it was not logged or saved.",
    rotate_password="Treat the secret as exposed and **change that password now**. Then ask again with a placeholder such as `YOUR_API_KEY` in its place.",
    rotate_key="Treat the secret as exposed and **revoke or rotate it now** with the service that issued it. Then ask again with a placeholder such as `YOUR_API_KEY` in its place.",
    english_docs="These docs are written in English: a question asked in English finds more.",
    start_here="Nothing in the docs matched these words; start from these pages:",
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
        searching="Die Dokumentation wird durchsucht",
        reading="Lese {title}",
        listing="Die Seiten werden aufgelistet",
        site_tool="Frage das Werkzeug {tool} der Website",
        tool="Prüfe ein Werkzeug",
        another_model="Versuche ein anderes Modell",
        credential="Ihre Frage scheint ein Geheimnis zu enthalten (erkannt: **{label}**), daher wurde sie nicht verarbeitet: Es wurde nichts gesucht, kein Modell hat sie gesehen, und sie wurde weder protokolliert noch gespeichert.",
        rotate_password="Betrachten Sie das Geheimnis als offengelegt und **ändern Sie dieses Passwort sofort**. Fragen Sie dann erneut, mit einem Platzhalter wie `YOUR_API_KEY` an seiner Stelle.",
        rotate_key="Betrachten Sie das Geheimnis als offengelegt und **widerrufen oder erneuern Sie es sofort** bei dem Dienst, der es ausgestellt hat. Fragen Sie dann erneut, mit einem Platzhalter wie `YOUR_API_KEY` an seiner Stelle.",
        english_docs="Die Dokumentation ist auf Englisch geschrieben: Eine Frage auf Englisch findet mehr.",
        start_here="Nichts in der Dokumentation passt zu diesen Wörtern; beginnen Sie mit diesen Seiten:",
    ),
    "fr": Framing(
        refusal="La documentation de {site} ne semble pas traiter ce sujet : je préfère ne pas deviner.",
        closest="Voici les pages les plus proches :",
        passages="Extraits cités des sections de la documentation les plus proches de votre question :",
        found_one="1 résultat trouvé",
        found="{n} résultats trouvés",
        not_covered="Aucune section de la documentation ne traite précisément ce sujet",
        writing="Rédaction de la réponse",
        searching="Recherche dans la documentation",
        reading="Lecture de {title}",
        listing="Liste des pages",
        site_tool="Interrogation de l’outil {tool} du site",
        tool="Vérification d’un outil",
        another_model="Essai d’un autre modèle",
        credential="Votre question semble contenir un secret (reconnu : **{label}**), elle n’a donc pas été traitée : rien n’a été recherché, aucun modèle ne l’a vue, et elle n’a été ni journalisée ni enregistrée.",
        rotate_password="Considérez ce secret comme exposé et **changez ce mot de passe dès maintenant**. Posez ensuite votre question à nouveau avec un espace réservé comme `YOUR_API_KEY` à sa place.",
        rotate_key="Considérez ce secret comme exposé et **révoquez-le ou renouvelez-le dès maintenant** auprès du service qui l’a émis. Posez ensuite votre question à nouveau avec un espace réservé comme `YOUR_API_KEY` à sa place.",
        english_docs="La documentation est rédigée en anglais : une question posée en anglais trouve davantage.",
        start_here="Rien dans la documentation ne correspond à ces mots ; commencez par ces pages :",
    ),
    "es": Framing(
        refusal="La documentación de {site} no parece tratar esto, así que no voy a adivinar.",
        closest="Estas son las páginas más cercanas:",
        passages="Citas de las secciones de la documentación más cercanas a tu pregunta:",
        found_one="1 resultado encontrado",
        found="{n} resultados encontrados",
        not_covered="Ninguna sección de la documentación trata esto de cerca",
        writing="Redactando la respuesta",
        searching="Buscando en la documentación",
        reading="Leyendo {title}",
        listing="Listando las páginas",
        site_tool="Consultando la herramienta {tool} del sitio",
        tool="Comprobando una herramienta",
        another_model="Probando otro modelo",
        credential="Tu pregunta parece contener un secreto (reconocido: **{label}**), así que no se procesó: no se buscó nada, ningún modelo la vio y no se registró ni se guardó.",
        rotate_password="Considera el secreto expuesto y **cambia esa contraseña ahora**. Después vuelve a preguntar con un marcador como `YOUR_API_KEY` en su lugar.",
        rotate_key="Considera el secreto expuesto y **revócalo o rótalo ahora** con el servicio que lo emitió. Después vuelve a preguntar con un marcador como `YOUR_API_KEY` en su lugar.",
        english_docs="La documentación está escrita en inglés: una pregunta en inglés encuentra más.",
        start_here="Nada en la documentación coincide con estas palabras; empieza por estas páginas:",
    ),
    "pt": Framing(
        refusal="A documentação de {site} não parece tratar disso, então não vou adivinhar.",
        closest="Estas são as páginas mais próximas:",
        passages="Citações das seções da documentação mais próximas da sua pergunta:",
        found_one="1 resultado encontrado",
        found="{n} resultados encontrados",
        not_covered="Nenhuma seção da documentação trata disso de perto",
        writing="Escrevendo a resposta",
        searching="Procurando na documentação",
        reading="Lendo {title}",
        listing="Listando as páginas",
        site_tool="Consultando a ferramenta {tool} do site",
        tool="Verificando uma ferramenta",
        another_model="Tentando outro modelo",
        credential="Sua pergunta parece conter um segredo (reconhecido: **{label}**), por isso não foi processada: nada foi pesquisado, nenhum modelo a viu e ela não foi registrada nem salva.",
        rotate_password="Considere o segredo exposto e **troque essa senha agora**. Depois pergunte de novo com um marcador como `YOUR_API_KEY` no lugar dele.",
        rotate_key="Considere o segredo exposto e **revogue-o ou substitua-o agora** no serviço que o emitiu. Depois pergunte de novo com um marcador como `YOUR_API_KEY` no lugar dele.",
        english_docs="A documentação está escrita em inglês: uma pergunta em inglês encontra mais.",
        start_here="Nada na documentação corresponde a estas palavras; comece por estas páginas:",
    ),
    "it": Framing(
        refusal="La documentazione di {site} non sembra trattare questo argomento, quindi non tiro a indovinare.",
        closest="Queste sono le pagine più vicine:",
        passages="Citazioni dalle sezioni della documentazione più vicine alla tua domanda:",
        found_one="1 risultato trovato",
        found="{n} risultati trovati",
        not_covered="Nessuna sezione della documentazione tratta questo da vicino",
        writing="Scrittura della risposta",
        searching="Ricerca nella documentazione",
        reading="Lettura di {title}",
        listing="Elenco delle pagine",
        site_tool="Consultazione dello strumento {tool} del sito",
        tool="Verifica di uno strumento",
        another_model="Prova con un altro modello",
        credential="La tua domanda sembra contenere un segreto (riconosciuto: **{label}**), quindi non è stata elaborata: non è stato cercato nulla, nessun modello l’ha vista e non è stata registrata né salvata.",
        rotate_password="Considera il segreto esposto e **cambia subito quella password**. Poi chiedi di nuovo con un segnaposto come `YOUR_API_KEY` al suo posto.",
        rotate_key="Considera il segreto esposto e **revocalo o rinnovalo subito** presso il servizio che l’ha emesso. Poi chiedi di nuovo con un segnaposto come `YOUR_API_KEY` al suo posto.",
        english_docs="La documentazione è scritta in inglese: una domanda in inglese trova di più.",
        start_here="Niente nella documentazione corrisponde a queste parole; inizia da queste pagine:",
    ),
    "ja": Framing(
        refusal="{site} のドキュメントにはこの内容が書かれていないようです。推測で答えることはしません。",
        closest="関連の近いページ:",
        passages="ご質問に最も近いドキュメントのセクションからの引用です:",
        found_one="1 件見つかりました",
        found="{n} 件見つかりました",
        not_covered="この内容を直接扱うセクションはドキュメントにありません",
        writing="回答を書いています",
        searching="ドキュメントを検索しています",
        reading="{title} を読んでいます",
        listing="ページの一覧を取得しています",
        site_tool="サイトのツール {tool} に問い合わせています",
        tool="ツールを確認しています",
        another_model="別のモデルを試しています",
        credential="ご質問に秘密情報が含まれているようです（検出: **{label}**）。そのため処理していません。検索は行われず、どのモデルにも渡されず、ログにも記録・保存されていません。",
        rotate_password="この秘密情報は漏えいしたものとして扱い、**今すぐそのパスワードを変更してください**。その後、`YOUR_API_KEY` のようなプレースホルダーに置き換えて、もう一度質問してください。",
        rotate_key="この秘密情報は漏えいしたものとして扱い、発行元のサービスで**今すぐ失効させるか再発行してください**。その後、`YOUR_API_KEY` のようなプレースホルダーに置き換えて、もう一度質問してください。",
        english_docs="このドキュメントは英語で書かれています。英語で質問すると、より多くの情報が見つかります。",
        start_here="ドキュメントにはこの言葉に一致する箇所がありませんでした。まずはこれらのページをご覧ください:",
    ),
    "zh": Framing(
        refusal="{site} 文档似乎没有涉及这个问题，所以我不做猜测。",
        closest="以下页面最为接近：",
        passages="以下引用自与你的问题最接近的文档章节：",
        found_one="找到 1 个结果",
        found="找到 {n} 个结果",
        not_covered="文档中没有章节直接涉及这个问题",
        writing="正在撰写回答",
        searching="正在搜索文档",
        reading="正在阅读 {title}",
        listing="正在列出页面",
        site_tool="正在询问网站的 {tool} 工具",
        tool="正在检查工具",
        another_model="正在尝试另一个模型",
        credential="你的问题似乎包含机密信息（识别为：**{label}**），因此未被处理：没有进行搜索，没有模型看到它，也没有被记录或保存。",
        rotate_password="请将该机密视为已泄露，并**立即修改该密码**。然后用 `YOUR_API_KEY` 之类的占位符代替它，再提问一次。",
        rotate_key="请将该机密视为已泄露，并在签发它的服务中**立即吊销或轮换它**。然后用 `YOUR_API_KEY` 之类的占位符代替它，再提问一次。",
        english_docs="本文档以英文撰写，用英文提问能找到更多内容。",
        start_here="文档中没有与这些词匹配的内容，可以从以下页面开始：",
    ),
    "ko": Framing(
        refusal="{site} 문서에서는 이 내용을 다루지 않는 것 같아 추측으로 답하지 않겠습니다.",
        closest="가장 가까운 페이지:",
        passages="질문과 가장 가까운 문서 섹션에서 인용한 내용입니다:",
        found_one="결과 1개를 찾았습니다",
        found="결과 {n}개를 찾았습니다",
        not_covered="이 내용을 직접 다루는 문서 섹션이 없습니다",
        writing="답변을 작성하는 중",
        searching="문서를 검색하는 중",
        reading="{title} 읽는 중",
        listing="페이지 목록을 가져오는 중",
        site_tool="사이트의 {tool} 도구에 묻는 중",
        tool="도구를 확인하는 중",
        another_model="다른 모델을 시도하는 중",
        credential="질문에 비밀 정보가 들어 있는 것 같습니다(인식됨: **{label}**). 그래서 처리하지 않았습니다. 검색도 하지 않았고, 어떤 모델도 보지 않았으며, 기록되거나 저장되지 않았습니다.",
        rotate_password="이 비밀 정보는 노출된 것으로 보고 **지금 바로 그 비밀번호를 변경하세요**. 그런 다음 그 자리에 `YOUR_API_KEY` 같은 자리표시자를 넣어 다시 질문하세요.",
        rotate_key="이 비밀 정보는 노출된 것으로 보고 발급한 서비스에서 **지금 바로 폐기하거나 교체하세요**. 그런 다음 그 자리에 `YOUR_API_KEY` 같은 자리표시자를 넣어 다시 질문하세요.",
        english_docs="이 문서는 영어로 작성되어 있어 영어로 질문하면 더 많은 내용을 찾을 수 있습니다.",
        start_here="문서에서 이 단어와 일치하는 내용을 찾지 못했습니다. 다음 페이지부터 살펴보세요:",
    ),
    "hi": Framing(
        refusal="{site} के दस्तावेज़ में यह विषय शामिल नहीं लगता, इसलिए मैं अनुमान नहीं लगाऊँगा।",
        closest="ये पेज सबसे नज़दीक हैं:",
        passages="आपके प्रश्न के सबसे नज़दीकी दस्तावेज़ खंडों से उद्धरण:",
        found_one="1 परिणाम मिला",
        found="{n} परिणाम मिले",
        not_covered="दस्तावेज़ का कोई भी खंड इस विषय को सीधे नहीं बताता",
        writing="उत्तर लिखा जा रहा है",
        searching="दस्तावेज़ में खोज जारी है",
        reading="{title} पढ़ा जा रहा है",
        listing="पेजों की सूची बनाई जा रही है",
        site_tool="साइट के {tool} टूल से पूछा जा रहा है",
        tool="एक टूल जाँचा जा रहा है",
        another_model="दूसरा मॉडल आज़माया जा रहा है",
        credential="आपके प्रश्न में कोई गोपनीय जानकारी लगती है (पहचानी गई: **{label}**), इसलिए इसे संसाधित नहीं किया गया: कुछ भी खोजा नहीं गया, किसी मॉडल ने इसे नहीं देखा, और इसे न लॉग किया गया न सहेजा गया।",
        rotate_password="इस गोपनीय जानकारी को उजागर मानें और **वह पासवर्ड अभी बदलें**। फिर उसकी जगह `YOUR_API_KEY` जैसे प्लेसहोल्डर के साथ दोबारा पूछें।",
        rotate_key="इस गोपनीय जानकारी को उजागर मानें और जिस सेवा ने इसे जारी किया है वहाँ **इसे अभी रद्द करें या बदलें**। फिर उसकी जगह `YOUR_API_KEY` जैसे प्लेसहोल्डर के साथ दोबारा पूछें।",
        english_docs="यह दस्तावेज़ अंग्रेज़ी में लिखा गया है: अंग्रेज़ी में पूछा गया प्रश्न अधिक परिणाम पाता है।",
        start_here="दस्तावेज़ में इन शब्दों से मेल खाता कुछ नहीं मिला; इन पेजों से शुरू करें:",
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
