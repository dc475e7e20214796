"""Stage 2 of a turn: recognise social openers and answer them from a template.

"Hello" names no documented subject, so the refusal gate would refuse it and tell the
reader, on their first message, that the assistant is broken. A greeting, a thank-you,
a farewell or a "who are you / what can you do" is therefore answered here, from a
template naming the site, with no retrieval and no model call.

Only input that is social *and nothing else* is claimed. The input is normalised, cut
into units (words; single characters for Han and kana, which are written without
spaces) and must be covered end to end by phrases from the inventory below. Anything
left over ("hi, how do I authenticate?", "hello world example", "thanks.md") means the
input carries a subject, and `match_social` returns None so the turn takes the normal
path.

Decisions worth knowing:

* Language codes: ``en es fr de pt it nl ru hi hi-Latn zh zh-Hant ja ko``. Romanised
  Hindi (Hinglish: "namaste", "shukriya", "aap kaun ho") is its own code, ``hi-Latn``,
  answered in romanised Hindi: a reader who typed Latin script gets Latin script back.
  Chinese written with traditional-only characters (謝謝, 再見, 你是誰) is ``zh-Hant``;
  input that reads the same in both scripts (你好) is ``zh``.
* Several social parts combine ("hi, who are you?", "ok thanks, bye"); the reply answers
  the one that most needs answering: identity, then farewell, then thanks, then greeting.
* Fillers ("ok", "great", "again", "for your help") and addressees ("bot", "DocPilot",
  the site's own name) may join social phrases but never make an input social alone.
* Elongations are tolerated ("hiii", "thxxx", "goood morning", "byee"): a word also
  matches with its runs of three or more letters cut to one or two, and its final
  repeated letter cut to one. Accents on Latin, Greek and Cyrillic letters are ignored
  ("adios" = "adiós"); marks of other scripts (Devanagari vowel signs) are kept.
* Templates use ``{site}`` and nothing else. It is replaced with ``str.replace``, never
  ``str.format``, so braces in an owner's template are plain text; the site name is
  escaped for Markdown because it is plain text too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Intent = Literal["greeting", "thanks", "farewell", "identity"]
# A filler joins social phrases but carries no intent of its own.
Role = Literal["greeting", "thanks", "farewell", "identity", "filler"]

# Longer inputs carry a subject (or are not small talk); never claim them.
MAX_SOCIAL_CHARS = 80

# When an input combines intents, the reply answers the first of these it contains.
INTENT_PRIORITY: tuple[Intent, ...] = ("identity", "farewell", "thanks", "greeting")

# Language of the reply when the input is only language-neutral ("👋", "ok 🙏").
FALLBACK_LANGUAGE = "en"

SITE_PLACEHOLDER = "{site}"


@dataclass(frozen=True)
class SocialReply:
    """A social input recognised, and the templated reply to it."""

    intent: Intent
    language: str
    markdown: str


# ---------------------------------------------------------------------------------------
# Phrase inventory: language -> role -> phrases separated by "|". Write phrases the way a
# reader types them; they pass through the same normalisation as the input, so case,
# accents and apostrophes do not matter ("What's up" = "whats up"). A phrase may appear
# in several languages (a loanword: "hallo" in de and nl, "bye" in en and hi-Latn) but
# must have the same role in each; the first language listing it is its primary one.
# ---------------------------------------------------------------------------------------

_NEUTRAL_PHRASES: Mapping[Role, str] = {
    "greeting": "👋",
    "thanks": "🙏",
    "filler": """
        ok | okay | docpilot | doc pilot | bot | chatbot | assistant | ai | robot | sir
    """,
}

_PHRASES: Mapping[str, Mapping[Role, str]] = {
    "en": {
        "greeting": """
            hi | hello | hey | heya | hiya | howdy | yo | sup | wassup | what's up | g'day |
            greetings | salutations | good morning | good afternoon | good evening |
            good day | morning | how are you | how are you doing | how are u | how r u |
            how's it going | how is it going | how do you do | nice to meet you |
            pleased to meet you | anyone there | anybody there | is anyone there |
            are you there | you there | i have a question | i have a quick question |
            quick question | can you help me | can you help | i need help |
            i need some help | can i ask you something | can i ask a question |
            can i ask you a question
        """,
        "thanks": """
            thanks | thank you | thankyou | thank u | thanku | thx | thnx | thanx | thnks |
            thks | tnx | ty | tysm | tyvm | tq | kthx | many thanks | much appreciated |
            appreciated | appreciate it | i appreciate it | appreciate that |
            i appreciate that | cheers | ta | big thanks | thanks heaps | thank you kindly |
            that helps | that helped | that was helpful | that was very helpful |
            very helpful | super helpful | helpful | you're the best | you rock |
            you are awesome | great help | nice one | grateful
        """,
        "farewell": """
            bye | goodbye | good bye | bye bye | byebye | bye now | see you | see ya |
            see you later | see you soon | cya | later | laters | catch you later |
            talk later | talk to you later | ttyl | take care | farewell | have a good day |
            have a nice day | have a great day | have a good one | good night | kthxbye |
            i'm done | i am done | that's all | that is all | that's it | gotta go |
            got to go | i have to go | i'm off | signing off | peace out | so long
        """,
        "identity": """
            who are you | who r u | who are u | who is this | who am i talking to |
            who am i speaking with | what are you | what are you for | what do you do |
            what can you do | what can u do | what can you help with |
            what can you help me with | what can i ask | what can i ask you |
            what should i ask | how can you help | how can you help me | how do you work |
            are you a bot | are you human | are you a human | are you a person |
            are you an ai | are you real | are you a real person | are you a robot |
            are you a machine | is this a bot | is this ai | introduce yourself |
            tell me about yourself | what are your capabilities | what are you capable of
        """,
        "filler": """
            k | kk | alright | all right | oh | ah | well | so | and | again | also | then |
            great | cool | nice | awesome | perfect | excellent | wonderful | amazing |
            sweet | got it | understood | makes sense | that makes sense | that works |
            that worked | it worked | it works | sounds good | fine | sure | yes | yeah |
            yep | please | very much | so much | a lot | a bunch | a ton | a million |
            in advance | for now | for today | for the help | for your help |
            for helping | for that | for the answer | for the info | for the information |
            for everything | there | everyone | everybody | all | y'all | folks | team |
            friend | buddy | mate | pal | dude | guys
        """,
    },
    "es": {
        "greeting": """
            hola | holi | buenas | buenos días | buen día | buenas tardes | buenas noches |
            qué tal | qué onda | saludos | cómo estás | cómo está | cómo andas | cómo va |
            tengo una pregunta | me puedes ayudar | puedes ayudarme
        """,
        "thanks": """
            gracias | muchas gracias | mil gracias | muchísimas gracias | muy agradecido |
            muy agradecida | te lo agradezco | se lo agradezco | se agradece |
            gracias a ti | muy amable
        """,
        "farewell": """
            adiós | hasta luego | hasta pronto | hasta mañana | hasta la próxima |
            nos vemos | chao | chau | cuídate | que te vaya bien | eso es todo
        """,
        "identity": """
            quién eres | quién es usted | quién sos | qué eres | qué eres tú |
            eres un bot | eres humano | eres una persona | qué puedes hacer |
            qué sabes hacer | qué haces | en qué me puedes ayudar |
            en qué puedes ayudarme | cómo me puedes ayudar | cómo puedes ayudarme |
            qué te puedo preguntar | preséntate
        """,
        "filler": """
            vale | bueno | pues | y | genial | perfecto | excelente | muy bien |
            de acuerdo | entendido | listo | otra vez | de nuevo | por todo |
            por tu ayuda | por su ayuda | por la ayuda | por la información | por favor |
            a todos | amigo | amiga | chicos | asistente
        """,
    },
    "fr": {
        "greeting": """
            bonjour | salut | coucou | bonsoir | allô | ça va | comment ça va |
            comment allez-vous | enchanté | enchantée | j'ai une question
        """,
        "thanks": """
            merci | merci beaucoup | merci bien | mille mercis | merci mille fois |
            je vous remercie | je te remercie | merci infiniment | c'est gentil |
            trop gentil
        """,
        "farewell": """
            au revoir | à bientôt | à plus | à plus tard | à la prochaine |
            bonne journée | bonne soirée | bonne nuit | adieu | tchao | c'est tout
        """,
        "identity": """
            qui es-tu | qui êtes-vous | tu es qui | vous êtes qui | qu'est-ce que tu es |
            que peux-tu faire | que pouvez-vous faire | qu'est-ce que tu peux faire |
            qu'est-ce que vous pouvez faire | tu sais faire quoi | tu peux faire quoi |
            comment peux-tu m'aider | comment pouvez-vous m'aider | es-tu un bot |
            es-tu un robot | présente-toi | présentez-vous
        """,
        "filler": """
            d'accord | super | parfait | génial | top | et | encore | oui | bon |
            très bien | pour tout | pour ton aide | pour votre aide | pour l'aide |
            pour la réponse | à tous | à toi | à vous | tout le monde | le bot | ami
        """,
    },
    "de": {
        "greeting": """
            hallo | hi | hey | moin | moin moin | servus | grüß gott | grüezi |
            hallöchen | guten morgen | guten tag | guten abend | morgen | wie geht's |
            wie geht es dir | wie geht es ihnen | ich habe eine frage
        """,
        "thanks": """
            danke | danke schön | dankeschön | danke sehr | vielen dank |
            vielen lieben dank | tausend dank | herzlichen dank | besten dank | danke dir |
            danke ihnen | dank dir | merci
        """,
        "farewell": """
            tschüss | tschüs | tschuess | tschau | auf wiedersehen | bis bald | bis später |
            bis dann | bis zum nächsten mal | ade | schönen tag | schönen tag noch |
            gute nacht | mach's gut | das war's
        """,
        "identity": """
            wer bist du | wer sind sie | was bist du | was sind sie | was kannst du |
            was kannst du tun | was kannst du machen | was können sie |
            was können sie tun | wie kannst du mir helfen | wie können sie mir helfen |
            wobei kannst du helfen | wobei kannst du mir helfen | bist du ein bot |
            bist du ein mensch | stell dich vor
        """,
        "filler": """
            alles klar | super | prima | perfekt | toll | klasse | und | nochmal |
            nochmals | also | ja | gut | sehr gut | na | zusammen | leute | alle |
            für die hilfe | für deine hilfe | für ihre hilfe | für alles | assistent
        """,
    },
    "pt": {
        "greeting": """
            olá | oi | oie | e aí | eaí | bom dia | boa tarde | boa noite | tudo bem |
            tudo bom | como vai | como vai você | como você está | salve |
            tenho uma pergunta
        """,
        "thanks": """
            obrigado | obrigada | muito obrigado | muito obrigada | obg | brigado |
            brigada | valeu | agradeço | muito agradecido | muito agradecida
        """,
        "farewell": "tchau | até logo | até mais | até breve | até amanhã | adeus | falou",
        "identity": """
            quem é você | quem és tu | quem é vc | o que você é | o que você pode fazer |
            o que você faz | o que você sabe fazer | o que vc pode fazer |
            como você pode me ajudar | como pode me ajudar | você é um bot |
            você é um robô
        """,
        "filler": """
            beleza | blz | certo | ótimo | perfeito | legal | show | e | de novo |
            pessoal | gente | amigo | pela ajuda | por tudo | assistente
        """,
    },
    "it": {
        "greeting": """
            ciao | salve | buongiorno | buon giorno | buonasera | buon pomeriggio |
            come stai | come va | ehi | ho una domanda
        """,
        "thanks": """
            grazie | grazie mille | mille grazie | molte grazie | grazie tante |
            ti ringrazio | la ringrazio
        """,
        "farewell": """
            arrivederci | a presto | a dopo | ci vediamo | buona giornata | buona serata |
            buonanotte | addio
        """,
        "identity": """
            chi sei | chi è lei | cosa sei | cosa sai fare | cosa puoi fare |
            che cosa puoi fare | che cosa sai fare | come puoi aiutarmi |
            come mi puoi aiutare | sei un bot
        """,
        "filler": """
            va bene | perfetto | ottimo | bene | e | ancora | di nuovo | a tutti | tutti |
            ragazzi | per l'aiuto | per tutto | assistente
        """,
    },
    "nl": {
        "greeting": """
            hallo | hoi | hey | hi | hee | goedemorgen | goedemiddag | goedenavond | dag |
            hoe gaat het | alles goed | ik heb een vraag
        """,
        "thanks": """
            dank je | dank je wel | dankjewel | dank u | dank u wel | dankuwel | bedankt |
            heel erg bedankt | hartelijk dank | merci
        """,
        "farewell": "tot ziens | doei | doeg | tot later | tot straks | tot de volgende keer",
        "identity": """
            wie ben jij | wie ben je | wie bent u | wat ben jij | wat ben je | wat kun je |
            wat kun jij | wat kun je doen | wat kan je doen | wat kunt u doen |
            hoe kun je me helpen | ben je een bot
        """,
        "filler": """
            oké | prima | top | super | en | nog | nogmaals | allemaal | iedereen |
            voor de hulp | voor je hulp
        """,
    },
    "ru": {
        "greeting": """
            привет | приветик | здравствуйте | здравствуй | здрасте | добрый день |
            доброе утро | добрый вечер | приветствую | как дела | хай
        """,
        "thanks": """
            спасибо | большое спасибо | спасибо большое | огромное спасибо | благодарю |
            спс | пасиб
        """,
        "farewell": """
            пока | пока пока | до свидания | всего доброго | всего хорошего | до встречи |
            увидимся
        """,
        "identity": """
            кто ты | кто вы | ты кто | вы кто | что ты такое | что ты умеешь |
            что вы умеете | что ты можешь | что вы можете | чем ты можешь помочь |
            чем вы можете помочь | ты бот
        """,
        "filler": """
            ок | окей | хорошо | понятно | отлично | супер | и | ещё | ещё раз | за помощь |
            всем
        """,
    },
    "hi": {
        "greeting": """
            नमस्ते | नमस्कार | प्रणाम | हेलो | हैलो | हाय | राम राम | सुप्रभात |
            आप कैसे हैं | कैसे हो | आप कैसे हो
        """,
        "thanks": """
            धन्यवाद | शुक्रिया | बहुत धन्यवाद | बहुत बहुत धन्यवाद | बहुत शुक्रिया |
            आपका धन्यवाद | आपका बहुत धन्यवाद | थैंक्स | थैंक यू
        """,
        "farewell": "अलविदा | फिर मिलेंगे | फिर मिलते हैं | बाय | शुभ रात्रि",
        "identity": """
            आप कौन हैं | आप कौन हो | तुम कौन हो | तू कौन है | आप क्या कर सकते हैं |
            तुम क्या कर सकते हो | आप मेरी क्या मदद कर सकते हैं |
            आप मेरी मदद कैसे कर सकते हैं
        """,
        "filler": "जी | ठीक है | अच्छा | और | भाई | दोस्त | बढ़िया",
    },
    "hi-Latn": {
        "greeting": """
            namaste | namaskar | pranam | ram ram | hi | hello | hey | hlo | helo | kaise ho |
            kaise hain | kaise hain aap | aap kaise ho | aap kaise hain | kya haal hai |
            kya hal hai
        """,
        "thanks": """
            shukriya | shukria | dhanyavaad | dhanyavad | dhanyawad | dhanywad |
            bahut shukriya | bahut dhanyavaad | aapka dhanyavaad | thanks | thank you |
            thanku
        """,
        "farewell": """
            alvida | phir milenge | phir milte hain | chalta hoon | chalti hoon |
            chalta hu | chalti hu | chalo bye | bye | tata
        """,
        "identity": """
            aap kaun ho | aap kaun hain | tum kaun ho | tu kaun hai | kaun ho aap |
            kaun ho tum | kaun hai tu | aap kya ho | tum kya ho | aap kya kar sakte ho |
            aap kya kar sakte hain | tum kya kar sakte ho | kya kar sakte ho |
            kya kar sakte hain | aap meri kya madad kar sakte ho |
            aap meri madad kaise kar sakte ho
        """,
        "filler": """
            ji | accha | acha | achha | theek hai | thik hai | haan | aur | bhai | yaar |
            dost | bahut | badhiya
        """,
    },
    "zh": {
        "greeting": """
            你好 | 您好 | 嗨 | 哈喽 | 哈啰 | 早上好 | 早安 | 下午好 | 晚上好 | 大家好 |
            你好吗 | 在吗 | 在不在 | 我有个问题
        """,
        "thanks": """
            谢谢 | 谢谢你 | 谢谢您 | 多谢 | 感谢 | 非常感谢 | 太感谢了 | 谢啦 | 谢了 |
            万分感谢 | 辛苦了
        """,
        "farewell": "再见 | 拜拜 | 回头见 | 下次见 | 晚安 | 先这样",
        "identity": """
            你是谁 | 您是谁 | 你是什么 | 你是干什么的 | 你能做什么 | 你可以做什么 |
            你会什么 | 你会做什么 | 你能干什么 | 你能帮我什么 | 你能帮我做什么 |
            你是机器人吗 | 介绍一下你自己 | 介绍一下自己
        """,
        "filler": "啊 | 呀 | 哦 | 啦 | 嘛 | 呢 | 吧 | 哈 | 嗯 | 好 | 好的 | 机器人 | 助手 | 小助手",
    },
    "zh-Hant": {
        "greeting": """
            你好 | 您好 | 嗨 | 哈囉 | 早安 | 午安 | 大家好 | 你好嗎 | 在嗎 | 在不在 |
            我有個問題
        """,
        "thanks": """
            謝謝 | 謝謝你 | 謝謝您 | 多謝 | 感謝 | 非常感謝 | 太感謝了 | 謝啦 | 謝了 |
            萬分感謝 | 辛苦了
        """,
        "farewell": "再見 | 掰掰 | 拜拜 | 回頭見 | 下次見 | 晚安 | 先這樣",
        "identity": """
            你是誰 | 您是誰 | 你是什麼 | 你是幹什麼的 | 你能做什麼 | 你可以做什麼 |
            你會什麼 | 你會做什麼 | 你能幫我什麼 | 你是機器人嗎 | 介紹一下你自己 |
            介紹一下自己
        """,
        "filler": "啊 | 呀 | 哦 | 啦 | 嘛 | 呢 | 吧 | 哈 | 嗯 | 好 | 好的 | 機器人 | 助理",
    },
    "ja": {
        "greeting": """
            こんにちは | こんにちわ | こんばんは | こんばんわ | おはよう |
            おはようございます | はじめまして | よろしく | よろしくお願いします |
            よろしくおねがいします | もしもし | やあ | ハロー | 質問があります
        """,
        "thanks": """
            ありがとう | ありがと | ありがとうございます | ありがとうございました |
            どうも | どうもありがとう | どうもありがとうございます | 有難う |
            サンキュー | 感謝します | 助かりました | 助かります
        """,
        "farewell": """
            さようなら | さよなら | またね | じゃあね | じゃね | バイバイ | またあとで |
            また今度 | おやすみ | おやすみなさい | 失礼します
        """,
        "identity": """
            あなたは誰 | あなたは誰ですか | あなたはだれ | あなたはだれですか | 誰ですか |
            だれですか | あなたは何 | あなたは何ですか | 何ができますか | 何ができるの |
            何ができる | あなたは何ができますか | 何が出来ますか | どんなことができますか |
            自己紹介して | 自己紹介してください
        """,
        # "ー" lets an elongated "ありがとうー" through; "さん" an addressee ("DocPilotさん").
        "filler": "ね | よ | ー | さん | はい | 了解 | わかりました | 本当に | ボット",
    },
    "ko": {
        "greeting": """
            안녕 | 안녕하세요 | 안녕하십니까 | 반가워요 | 반갑습니다 | 하이 | 헬로 |
            질문이 있어요
        """,
        "thanks": """
            감사합니다 | 감사해요 | 고마워요 | 고마워 | 고맙습니다 | 땡큐 | 정말 감사합니다 |
            정말 고마워요
        """,
        "farewell": """
            안녕히 가세요 | 안녕히 계세요 | 잘 가 | 잘가 | 잘 가요 | 또 봐요 | 다음에 봐요 |
            바이 | 수고하세요
        """,
        "identity": """
            누구세요 | 누구야 | 넌 누구야 | 너는 누구야 | 당신은 누구세요 |
            당신은 누구인가요 | 뭘 할 수 있어요 | 무엇을 할 수 있나요 | 뭐 할 수 있어 |
            뭐 할 수 있어요
        """,
        "filler": "네 | 좋아요 | 알겠습니다 | 아",
    },
}

# ---------------------------------------------------------------------------------------
# Reply templates: language -> intent -> Markdown with {site}. Claims made here must stay
# true of the product: answers come only from the site's documentation, with citations,
# and an uncovered question gets the closest pages instead of an answer.
# ---------------------------------------------------------------------------------------

_TEMPLATES: dict[str, dict[Intent, str]] = {
    "en": {
        "greeting": (
            "Hello! I'm the documentation assistant for {site}. Ask me a question about "
            "{site} and I'll answer from its documentation, citing the sections I used."
        ),
        "thanks": "You're welcome! If anything else about {site} is unclear, just ask.",
        "farewell": "Goodbye! Come back any time you have a question about {site}.",
        "identity": (
            "I'm the documentation assistant for {site}. I answer questions using only the "
            "{site} documentation and cite the sections each answer comes from. If the "
            "documentation doesn't cover something, I'll say so and point you to the closest "
            "pages. Try asking how to do something, or what an option means."
        ),
    },
    "es": {
        "greeting": (
            "¡Hola! Soy el asistente de la documentación de {site}. Hazme una pregunta sobre "
            "{site} y te responderé a partir de su documentación, citando las secciones que "
            "use."
        ),
        "thanks": "¡De nada! Si hay algo más de {site} que no esté claro, pregúntame.",
        "farewell": "¡Hasta luego! Vuelve cuando tengas una pregunta sobre {site}.",
        "identity": (
            "Soy el asistente de la documentación de {site}. Respondo preguntas usando solo "
            "la documentación de {site} y cito las secciones de las que sale cada respuesta. "
            "Si la documentación no cubre algo, te lo diré y te señalaré las páginas más "
            "cercanas. Prueba a preguntar cómo hacer algo o qué significa una opción."
        ),
    },
    "fr": {
        "greeting": (
            "Bonjour ! Je suis l'assistant de la documentation de {site}. Posez-moi une "
            "question sur {site} et je vous répondrai à partir de sa documentation, en citant "
            "les sections utilisées."
        ),
        "thanks": (
            "Je vous en prie ! Si autre chose concernant {site} n'est pas clair, n'hésitez "
            "pas à demander."
        ),
        "farewell": "Au revoir ! Revenez quand vous voulez si vous avez une question sur {site}.",
        "identity": (
            "Je suis l'assistant de la documentation de {site}. Je réponds aux questions "
            "uniquement à partir de la documentation de {site} et je cite les sections d'où "
            "vient chaque réponse. Si la documentation ne couvre pas un sujet, je vous le "
            "dirai et je vous indiquerai les pages les plus proches. Demandez par exemple "
            "comment faire quelque chose, ou ce que signifie une option."
        ),
    },
    "de": {
        "greeting": (
            "Hallo! Ich bin der Dokumentationsassistent für {site}. Stellen Sie mir eine Frage "
            "zu {site}, und ich antworte anhand der Dokumentation und nenne die Abschnitte, "
            "die ich verwendet habe."
        ),
        "thanks": "Gern geschehen! Wenn sonst noch etwas zu {site} unklar ist, fragen Sie einfach.",
        "farewell": (
            "Auf Wiedersehen! Kommen Sie jederzeit wieder, wenn Sie eine Frage zu {site} haben."
        ),
        "identity": (
            "Ich bin der Dokumentationsassistent für {site}. Ich beantworte Fragen "
            "ausschließlich anhand der Dokumentation von {site} und nenne die Abschnitte, aus "
            "denen jede Antwort stammt. Wenn die Dokumentation etwas nicht abdeckt, sage ich "
            "das und verweise auf die passendsten Seiten. Fragen Sie zum Beispiel, wie man "
            "etwas macht oder was eine Option bedeutet."
        ),
    },
    "pt": {
        "greeting": (
            "Olá! Sou o assistente da documentação de {site}. Faça uma pergunta sobre {site} "
            "e eu respondo com base na documentação, citando as seções que usei."
        ),
        "thanks": "De nada! Se mais alguma coisa sobre {site} não estiver clara, é só perguntar.",
        "farewell": "Até logo! Volte sempre que tiver uma pergunta sobre {site}.",
        "identity": (
            "Sou o assistente da documentação de {site}. Respondo a perguntas usando apenas a "
            "documentação de {site} e cito as seções de onde vem cada resposta. Se a "
            "documentação não cobrir algo, eu aviso e indico as páginas mais próximas. "
            "Experimente perguntar como fazer algo ou o que significa uma opção."
        ),
    },
    "it": {
        "greeting": (
            "Ciao! Sono l'assistente della documentazione di {site}. Fammi una domanda su "
            "{site} e ti risponderò in base alla documentazione, citando le sezioni che ho "
            "usato."
        ),
        "thanks": "Prego! Se c'è altro su {site} che non è chiaro, chiedi pure.",
        "farewell": "Arrivederci! Torna quando vuoi se hai una domanda su {site}.",
        "identity": (
            "Sono l'assistente della documentazione di {site}. Rispondo alle domande usando "
            "solo la documentazione di {site} e cito le sezioni da cui proviene ogni "
            "risposta. Se la documentazione non tratta un argomento, te lo dico e ti indico "
            "le pagine più vicine. Prova a chiedere come fare qualcosa o cosa significa "
            "un'opzione."
        ),
    },
    "nl": {
        "greeting": (
            "Hallo! Ik ben de documentatie-assistent van {site}. Stel me een vraag over "
            "{site}, dan antwoord ik op basis van de documentatie en noem ik de secties die ik "
            "heb gebruikt."
        ),
        "thanks": "Graag gedaan! Als er nog iets over {site} onduidelijk is, vraag het gerust.",
        "farewell": "Tot ziens! Kom gerust terug als je een vraag over {site} hebt.",
        "identity": (
            "Ik ben de documentatie-assistent van {site}. Ik beantwoord vragen alleen op basis "
            "van de documentatie van {site} en noem de secties waar elk antwoord vandaan komt. "
            "Als de documentatie iets niet behandelt, zeg ik dat en wijs ik je op de meest "
            "verwante pagina's. Vraag bijvoorbeeld hoe je iets doet of wat een optie betekent."
        ),
    },
    "ru": {
        "greeting": (
            "Здравствуйте! Я ассистент по документации {site}. Задайте вопрос по {site}, и я "
            "отвечу на основе документации, указав разделы, которые использовал."
        ),
        "thanks": "Пожалуйста! Если что-то ещё по {site} непонятно, спрашивайте.",
        "farewell": "До свидания! Возвращайтесь, если появится вопрос по {site}.",
        "identity": (
            "Я ассистент по документации {site}. Я отвечаю на вопросы только по документации "
            "{site} и указываю разделы, из которых взят каждый ответ. Если в документации "
            "чего-то нет, я так и скажу и покажу самые близкие страницы. Спросите, например, "
            "как что-то сделать или что означает тот или иной параметр."
        ),
    },
    "hi": {
        "greeting": (
            "नमस्ते! मैं {site} का डॉक्यूमेंटेशन सहायक हूँ। {site} के बारे में कोई भी सवाल "
            "पूछिए, मैं डॉक्यूमेंटेशन के आधार पर जवाब दूँगा और जिन सेक्शन का इस्तेमाल किया, "
            "उनका हवाला दूँगा।"
        ),
        "thanks": "आपका स्वागत है! {site} के बारे में कुछ और समझ न आए तो बेझिझक पूछिए।",
        "farewell": "फिर मिलेंगे! {site} के बारे में कोई सवाल हो तो कभी भी वापस आइए।",
        "identity": (
            "मैं {site} का डॉक्यूमेंटेशन सहायक हूँ। मैं सिर्फ़ {site} के डॉक्यूमेंटेशन के "
            "आधार पर सवालों के जवाब देता हूँ और हर जवाब के साथ बताता हूँ कि वह किन सेक्शन से "
            "लिया गया है। अगर डॉक्यूमेंटेशन में कोई बात नहीं है, तो मैं साफ़ बता दूँगा और "
            "सबसे मिलते-जुलते पेज दिखाऊँगा। जैसे, पूछिए कि कोई काम कैसे करें या किसी विकल्प "
            "का मतलब क्या है।"
        ),
    },
    "hi-Latn": {
        "greeting": (
            "Namaste! Main {site} ka documentation assistant hoon. {site} ke baare mein koi "
            "bhi sawaal poochhiye, main documentation ke aadhaar par jawaab doonga aur jin "
            "sections ka istemaal kiya, unka hawaala doonga."
        ),
        "thanks": (
            "Koi baat nahi! {site} ke baare mein kuch aur samajh na aaye to bejhijhak poochhiye."
        ),
        "farewell": "Phir milenge! {site} ke baare mein koi sawaal ho to kabhi bhi wapas aaiye.",
        "identity": (
            "Main {site} ka documentation assistant hoon. Main sirf {site} ke documentation "
            "ke aadhaar par sawaalon ke jawaab deta hoon aur har jawaab ke saath batata hoon "
            "ki woh kin sections se liya gaya hai. Agar documentation mein koi baat nahi hai, "
            "to main saaf bata doonga aur sabse milte-julte pages dikhaoonga. Jaise, "
            "poochhiye ki koi kaam kaise karein ya kisi option ka matlab kya hai."
        ),
    },
    "zh": {
        "greeting": (
            "你好！我是 {site} 的文档助手。你可以问我关于 {site} 的问题，我会根据文档回答，"
            "并注明引用的章节。"
        ),
        "thanks": "不客气！如果还有关于 {site} 的疑问，随时问我。",
        "farewell": "再见！有关于 {site} 的问题时，欢迎随时回来。",
        "identity": (
            "我是 {site} 的文档助手。我只根据 {site} 的文档回答问题，并注明每个答案出自哪些"
            "章节。如果文档没有涉及某个内容，我会直接说明，并列出最相关的页面。你可以问我怎么"
            "做某件事，或者某个选项是什么意思。"
        ),
    },
    "zh-Hant": {
        "greeting": (
            "你好！我是 {site} 的文件助理。你可以問我關於 {site} 的問題，我會根據文件回答，"
            "並註明引用的章節。"
        ),
        "thanks": "不客氣！如果還有關於 {site} 的疑問，隨時問我。",
        "farewell": "再見！有關於 {site} 的問題時，歡迎隨時回來。",
        "identity": (
            "我是 {site} 的文件助理。我只根據 {site} 的文件回答問題，並註明每個答案出自哪些"
            "章節。如果文件沒有涵蓋某個內容，我會直接說明，並列出最相關的頁面。你可以問我怎麼"
            "做某件事，或者某個選項是什麼意思。"
        ),
    },
    "ja": {
        "greeting": (
            "こんにちは！{site} のドキュメントアシスタントです。{site} について質問して"
            "いただければ、ドキュメントをもとに、参照したセクションを示しながらお答えします。"
        ),
        "thanks": (
            "どういたしまして！{site} について他にも分からないことがあれば、"
            "いつでも聞いてください。"
        ),
        "farewell": "さようなら！{site} について質問があれば、いつでもまたどうぞ。",
        "identity": (
            "{site} のドキュメントアシスタントです。{site} のドキュメントだけをもとに質問に"
            "答え、それぞれの回答の出典となったセクションを示します。ドキュメントに記載がない"
            "場合はそうお伝えし、関連の深いページをご案内します。何かのやり方や、オプションの"
            "意味などを聞いてみてください。"
        ),
    },
    "ko": {
        "greeting": (
            "안녕하세요! 저는 {site} 문서 도우미입니다. {site}에 대해 질문하시면 문서를 "
            "바탕으로 답하고, 참고한 섹션을 알려 드립니다."
        ),
        "thanks": "천만에요! {site}에 대해 더 궁금한 점이 있으면 언제든지 물어보세요.",
        "farewell": "안녕히 가세요! {site}에 대해 궁금한 점이 생기면 언제든지 다시 찾아 주세요.",
        "identity": (
            "저는 {site} 문서 도우미입니다. {site} 문서만을 바탕으로 질문에 답하고, 각 "
            "답변의 출처가 된 섹션을 인용합니다. 문서에서 다루지 않는 내용이면 그렇다고 "
            "말씀드리고 가장 가까운 페이지를 안내해 드립니다. 어떤 작업을 하는 방법이나 "
            "옵션의 의미를 물어보세요."
        ),
    },
}

DEFAULT_TEMPLATES: Mapping[str, Mapping[Intent, str]] = MappingProxyType(
    {language: MappingProxyType(by_intent) for language, by_intent in _TEMPLATES.items()}
)

# ---------------------------------------------------------------------------------------
# Normalisation and matching.
# ---------------------------------------------------------------------------------------

# Removed rather than turned into a space, so "what's" and "whats" meet.
_APOSTROPHES = frozenset("'’‘ʼ")
# Symbols that are phrases in their own right; every other symbol and emoji is a separator.
_KEPT_SYMBOLS = frozenset("👋🙏")
# Diacritics on letters below this code point (Latin, Greek, Cyrillic) are ignored.
_FOLD_MARKS_BELOW = 0x0530

_RUN_OF_THREE_OR_MORE = re.compile(r"(.)\1{2,}")
_FINAL_REPEAT = re.compile(r"(.)\1+$")


def _is_unspaced_char(ch: str) -> bool:
    """True for Han and kana, which are written without spaces and matched per character."""
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # Hiragana, Katakana (with the prolonged sound mark)
        or code == 0x3005  # 々, the ideographic iteration mark
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0x20000 <= code <= 0x3FFFF  # CJK extension planes
    )


def _normalise(text: str) -> str:
    """Case-fold, NFKC, drop Latin/Greek/Cyrillic accents, turn punctuation into spaces."""
    text = "".join(ch for ch in text if ch not in _APOSTROPHES)
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    out: list[str] = []
    base = 0  # code point of the letter the next mark would attach to; 0 after a separator
    for ch in decomposed:
        category = unicodedata.category(ch)
        if category[0] == "M":
            # Marks after a separator are debris (emoji variation selectors, say).
            if base >= _FOLD_MARKS_BELOW:
                out.append(ch)
        elif category[0] in "LN":
            out.append(ch)
            base = ord(ch)
        elif ch in _KEPT_SYMBOLS:
            out.append(f" {ch} ")
            base = 0
        else:
            out.append(" ")
            base = 0
    return unicodedata.normalize("NFC", "".join(out))


def _units(text: str) -> tuple[str, ...]:
    """Cut text into match units: words, and single characters of Han and kana."""
    units: list[str] = []
    for word in _normalise(text).split():
        run: list[str] = []
        for ch in word:
            if _is_unspaced_char(ch):
                if run:
                    units.append("".join(run))
                    run = []
                units.append(ch)
            else:
                run.append(ch)
        if run:
            units.append("".join(run))
    return tuple(units)


def _spellings(unit: str) -> frozenset[str]:
    """The unit and its de-elongated forms: "hiii" -> hi, "goood" -> good, "byee" -> bye."""
    if len(unit) < 2:
        return frozenset((unit,))
    to_one = _RUN_OF_THREE_OR_MORE.sub(r"\1", unit)
    to_two = _RUN_OF_THREE_OR_MORE.sub(r"\1\1", unit)
    return frozenset(
        (
            unit,
            to_one,
            to_two,
            _FINAL_REPEAT.sub(r"\1", unit),
            _FINAL_REPEAT.sub(r"\1", to_two),
        )
    )


@dataclass(frozen=True)
class _Phrase:
    units: tuple[str, ...]
    role: Role
    # Languages using this phrase, primary first; empty for language-neutral phrases.
    languages: tuple[str, ...]


def _split_phrases(listing: str) -> list[str]:
    return [phrase.strip() for phrase in listing.split("|") if phrase.strip()]


def _build_inventory(
    phrases: Mapping[str, Mapping[Role, str]], neutral: Mapping[Role, str]
) -> dict[str, tuple[_Phrase, ...]]:
    """Index every phrase by its first unit; one role per phrase across all languages."""
    roles: dict[tuple[str, ...], Role] = {}
    languages: dict[tuple[str, ...], list[str]] = {}
    sources: list[tuple[str | None, Mapping[Role, str]]] = [(None, neutral)]
    sources += list(phrases.items())
    for language, by_role in sources:
        for role, listing in by_role.items():
            for phrase in _split_phrases(listing):
                units = _units(phrase)
                if not units:
                    raise ValueError(f"social phrase {phrase!r} ({language}) normalises to nothing")
                seen = roles.setdefault(units, role)
                if seen != role:
                    raise ValueError(
                        f"social phrase {phrase!r} is {role!r} in {language} "
                        f"but {seen!r} in {languages[units] or 'the neutral list'}"
                    )
                listed = languages.setdefault(units, [])
                if language is not None and language not in listed:
                    listed.append(language)
    index: dict[str, list[_Phrase]] = {}
    for units, role in roles.items():
        index.setdefault(units[0], []).append(_Phrase(units, role, tuple(languages[units])))
    return {first: tuple(entries) for first, entries in index.items()}


_INVENTORY = _build_inventory(_PHRASES, _NEUTRAL_PHRASES)

_missing_templates = sorted(set(_PHRASES) - set(_TEMPLATES))
if _missing_templates:
    raise ValueError(f"social phrases for {_missing_templates} have no reply templates")


def _cover(units: tuple[str, ...], addressees: tuple[_Phrase, ...]) -> list[_Phrase] | None:
    """Cover all units with phrases, fewest phrases first, then fewest fillers; None if none."""
    spellings = [_spellings(unit) for unit in units]
    # cost[i]: (phrases, fillers) of the best cover of units[:i]; last[i]: its last phrase
    # and where that phrase starts. Unreached positions stay None.
    cost: list[tuple[int, int] | None] = [None] * (len(units) + 1)
    last: list[tuple[int, _Phrase] | None] = [None] * (len(units) + 1)
    cost[0] = (0, 0)
    for i, here in enumerate(spellings):
        reached = cost[i]
        if reached is None:
            continue
        candidates = [phrase for s in here for phrase in _INVENTORY.get(s, ())]
        candidates += [phrase for phrase in addressees if phrase.units[0] in here]
        for phrase in candidates:
            end = i + len(phrase.units)
            if end > len(units) or not all(
                unit in spellings[i + k] for k, unit in enumerate(phrase.units)
            ):
                continue
            new = (reached[0] + 1, reached[1] + (phrase.role == "filler"))
            known = cost[end]
            if known is None or new < known:
                cost[end] = new
                last[end] = (i, phrase)
    path: list[_Phrase] = []
    end = len(units)
    while end > 0:
        step = last[end]
        if step is None:
            return None
        end, phrase = step
        path.append(phrase)
    path.reverse()
    return path


def _reply_language(path: list[_Phrase]) -> str:
    """The language most of the phrases belong to; intent phrases weigh double fillers."""
    weight: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for phrase in path:
        if not phrase.languages:
            continue
        share = (0.5 if phrase.role == "filler" else 1.0) / len(phrase.languages)
        for language in phrase.languages:
            weight[language] = weight.get(language, 0.0) + share
            first_seen.setdefault(language, len(first_seen))
    if not weight:
        return FALLBACK_LANGUAGE
    return max(weight, key=lambda language: (weight[language], -first_seen[language]))


def _escape_markdown(text: str) -> str:
    """Backslash-escape characters that would turn a plain site name into Markdown."""
    return "".join(f"\\{ch}" if ch in "\\`*_[]<>#|~" else ch for ch in text)


def _template(
    language: str, intent: Intent, templates: Mapping[str, Mapping[str, str]] | None
) -> str:
    """Owner's template for the language, else ours, else the owner's English, else ours."""
    owner = templates or {}
    for candidate in (language, FALLBACK_LANGUAGE):
        if intent in owner.get(candidate, {}):
            return owner[candidate][intent]
        if intent in DEFAULT_TEMPLATES.get(candidate, {}):
            return DEFAULT_TEMPLATES[candidate][intent]
    return DEFAULT_TEMPLATES[FALLBACK_LANGUAGE][intent]


def match_social(
    text: str, site_name: str, templates: Mapping[str, Mapping[str, str]] | None = None
) -> SocialReply | None:
    """Answer `text` from a template if it is purely social; None if it carries anything else.

    `templates` (language -> intent -> Markdown) override the defaults per language and
    intent; a missing one falls back to the default of that language, then to English.
    ``{site}`` in a template becomes the escaped site name; no other braces are special.
    """
    if len(text.strip()) > MAX_SOCIAL_CHARS:
        return None
    units = _units(text)
    if not units:
        return None
    addressees: tuple[_Phrase, ...] = ()
    site_units = _units(site_name)
    if site_units:
        addressees = (_Phrase(site_units, "filler", ()),)
    path = _cover(units, addressees)
    if path is None:
        return None
    roles = {phrase.role for phrase in path}
    intent = next((intent for intent in INTENT_PRIORITY if intent in roles), None)
    if intent is None:
        return None
    language = _reply_language(path)
    markdown = _template(language, intent, templates).replace(
        SITE_PLACEHOLDER, _escape_markdown(site_name.strip())
    )
    return SocialReply(intent=intent, language=language, markdown=markdown)
