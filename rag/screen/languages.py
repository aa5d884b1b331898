"""The words and phrases of the injection screen's lexical rules in languages other than English.

rag.screen.rules builds its rules from them: overrides ("ignore the previous instructions"), "if you are an
AI", "from now on you are", fake system headers, "at the end of every answer" and "tell the user that", a header that
addresses an AI assistant, the model or the agent ("Uwaga dla asystenta AI: ..."), an agent's tools and access, the
chat history mailed away, an act kept from the user. Each is a regular expression over casefolded text.
"""

from __future__ import annotations

from rag.screen.tables import table

TABLE = table("languages")


SEND_TO = TABLE["SEND_TO"]
UNTOLD = TABLE["UNTOLD"]

CAPABILITY_ML = TABLE["CAPABILITY_ML"]
DANGER_ANY_LANGUAGE = TABLE["DANGER_ANY_LANGUAGE"]
HISTORY = TABLE["HISTORY"]
OVERRIDE_ML = TABLE["OVERRIDE_ML"]
DICTATE_ML = TABLE["DICTATE_ML"]
ANSWER_MUST_ML = TABLE["ANSWER_MUST_ML"]
MUST_ML = TABLE["MUST_ML"]
IF_AI_ML = TABLE["IF_AI_ML"]
ROLE_ML = TABLE["ROLE_ML"]
SYSTEM_HEADER_ML = TABLE["SYSTEM_HEADER_ML"]
THIS_TEXT_ML = TABLE["THIS_TEXT_ML"]
IF_ML = TABLE["IF_ML"]
AUTOMATED_AGENT_ML = TABLE["AUTOMATED_AGENT_ML"]
MODEL_ML = TABLE["MODEL_ML"]
TO_MODEL_ML = TABLE["TO_MODEL_ML"]
AI_MODEL_ML = TABLE["AI_MODEL_ML"]
INDIC_TAIL = TABLE["INDIC_TAIL"]
# an assistant, a helper or a bot in more languages and their case forms (the vocative "Asystencie", "Боте", the
# dative "köməkçiyə", "көмекшісіне", "туслахад", "laguntzaileari"); a stem that is also a common word is left out
# (Hungarian "mi", Serbian "ви" for "you", Bengali "বট" for a banyan tree)
ASSISTANT_MORE = (
    r"көмекші\w*|жардамчы\w*|туслах\w*|օգնական\w*|ასისტენტ\w*|დამხმარე\w*|yordamchi\w*|köməkçi\w*|"
    r"laguntzaile\w*|aðstoðar\w*|padėjėj\w*|palīg\w*|abiline\w*|помошник\w*|помоћник\w*|pomo[čć]nik\w*|"
    r"pomocník\w*|معاون|مساعد\w*|"
    r"(?:சஹாயக|உதவியாள|సహాయక|ಸಹಾಯಕ|സഹായി|सहाय्यक|સહાયક|ਸਹਾਇਕ|සහායක)" + INDIC_TAIL + r"|"
    r"mataimaki|umsizi|ຜູ້ຊ່ວຍ|ជំនួយការ"
)
# a bot, in its case forms: only as a vocative or after an addressing word ("Bot: ¡Hola!" is a transcript)
BOT_ML = (
    r"(?:chat)?bot(?:e|u|a|em|om|ot|ten|ti|tia|ul|ului|ów)?|(?:чат-?)?бот(?:е|у|а|ом|ы|ов|ам)?|بوت|روبو\w*|"
    r"(?:बॉट|ബോട്ട്|போட்)" + INDIC_TAIL
)
AGENT_WORD = TABLE["AGENT_WORD"]
AUTOMATED_ML = TABLE["AUTOMATED_ML"]
ASSISTANT_ML = (
    r"(?:(?:(?:ai|ki|ia|ии|ші)[ -]?(?:agent\w*|агент\w*|agente)|(?:(?:ai|ki|ia|ии|ші)-?)?(?:assistant\w*|asistent\w*|assistent\w*|asystent\w*|asistan\w*|ассистент\w*|асистент\w*|"
    r"помощник\w*|помічник\w*|βοηθ\w*|المساعد|مساعد|העוזר|עוזר|دستیار|(?:सहायक|সহকারী)" + INDIC_TAIL + r"|trợ lý|"
    r"asisten|msaidizi|"
    r"(?:tekoäly)?avustaja\w*|asszisztens\w*|chatbot\w*|copilot\w*|chatgpt|llm|בוט|לבוט|ربات|روبوت|"
    r"اسسٹنٹ|உதவியாளர்\w*|ረዳት|robô|" + ASSISTANT_MORE + "))|" + AUTOMATED_AGENT_ML + "|" + AI_MODEL_ML + ")"
)
SYSTEM_CJK = TABLE["SYSTEM_CJK"]
ASSISTANT_CJK = (  # and Thai, also written without spaces between words
    r"(?:助手|助理|机器人|機器人|アシスタント|ボット|어시스턴트|챗봇|ai ?비서|人工智能|人工知能|인공지능|"
    + SYSTEM_CJK
    + r"|システム|시스템|"
    r"ผู้ช่วย|เอเจนต์|แชทบอท)"
)
AI_CJK = TABLE["AI_CJK"]
AGENT_CJK = TABLE["AGENT_CJK"]
# artificial intelligence in more languages, in its case forms ("вештачка интелигенцијо", "gervigreindarinnar")
AI_MORE = (
    r"intelig[eê]ncia artificial|inteligen[țţ]\w* artificial\w*|inteligjenc\w* artificial\w*|"
    r"intel·ligència artificial|intelixencia artificial|adimen artifizial\w*|künstliche\w* intelligenz|"
    r"искусствен\w* интеллект\w*|штучн\w* інтелект\w*|изкуствен\w* интелект\w*|вештачк\w* интелигенциј\w*|"
    r"ve[šs]ta[čc]k\w* inteligencij\w*|umjetn\w* inteligencij\w*|umetn\w* inteligenc\w*|umel\w* inteligenci\w*|"
    r"uměl\w* inteligenc\w*|dirbtin\w* intelekt\w*|mākslīg\w* intelekt\w*|tehisintellekt\w*|tehisaru\w*|"
    r"gervigreind\w*|sun'?iy intellekt\w*|жасанды интеллект\w*|жасалма интеллект\w*|хиймэл оюун ухаан\w*|"
    r"արհեստական բանականությ\w*|ხელოვნურ\w* ინტელექტ\w*|süni intellekt\w*|مصنوعی ذہانت|ذكاء اصطناعي|"
    r"בינה מלאכותית|trí tuệ nhân tạo|kecerdasan buatan|ปัญญาประดิษฐ์|akili bandia|"
    r"artipisyal na intelihensiya|τεχνητ\w* νοημοσύν\w*|artificiell intelligens|kunstig intelligens|"
    r"mesterséges intelligenci\w*|штучн\w* інтэлект\w*|deallusrwydd artiffisial|intleacht shaorga|"
    r"አርቴፊሻል ኢንተለጀንስ|ሰው ሠራሽ አስተውሎት|කෘත්‍රිම බුද්ධි\w*|કૃત્રિમ બુદ્ધિ\w*|ਬਣਾਉਟੀ ਬੁੱਧੀ|зеҳни сунъӣ|"
    r"intelliġenza artifiċjali|kunsmatige intelligensie|emeli aň|"
    r"нейросет\w*|нейронн\w* сет\w*|нейромереж\w*|невронн\w* мреж\w*|人工智慧|एआय|เอไอ|red(?:es)? neuronal\w*|"
    r"réseaux? de neurones|neuronal\w* netz\w*|rede\w* neura\w*|ret[ei] neural[ei]|sie[ćc]\w* neuronow\w*|"
    r"neura(?:al|le) netwerk\w*|sinir ağ\w*|"
    r"(?:कृत्रिम बुद्धिमत्त|কৃত্রিম বুদ্ধিমত্ত|కృత్రిమ మేధ|ಕೃತಕ ಬುದ್ಧಿಮತ್ತ|കൃത്രിമ ബുദ്ധി|செயற்கை நுண்ணறிவ)" + INDIC_TAIL
)
AI_ML = (
    r"(?:ai|a\.i\.|ia|ki|ии|ші|yapay zek\w*|sztuczn\w* inteligencj\w*|inteligencia artificial|intelligence "
    r"artificielle|künstliche intelligenz|intelligenza artificiale|kunstmatige intelligentie|umělá inteligence|"
    r"الذكاء الاصطناعي|הבינה המלאכותית|هوش مصنوعی|एआई|এআই|tekoäly\w*|mesterséges intelligencia|sprachmodell\w*|"
    r"اے آئی|செயற்கை நுண்ணறிவு|ሰው ሰራሽ አስተውሎት|süni intellekt|എഐ|ஏஐ|ఏఐ|ಎಐ|" + AI_MORE + ")"
)
# a language model: "מודל שפה", "भाषा मॉडल", "modelo de lenguaje", "языковая модель", "dil modeli"
LANGUAGE_MODEL_ML = (
    r"(?:modelos? de (?:lenguaje|linguagem|idioma)|modèles? de langage|modell\w* linguistic\w*|taalmodel\w*|"
    r"model\w* językow\w*|языков\w* модел\w*|мовн\w* модел\w*|dil model\w*|نموذج\w* (?:لغوي|اللغة)\w*|"
    r"מודל(?:ים)? (?:ה)?שפה|مدل (?:زبانی|زبان)|(?:भाषा|লার্জ ল্যাঙ্গুয়েজ|ভাষা) (?:मॉडल|মডেল)" + INDIC_TAIL + r"|"
    r"mô hình ngôn ngữ|model bahasa|språkmodell\w*|sprogmodel\w*|γλωσσικ\w* μοντέλ\w*|jazykov\w* model\w*|"
    r"model\w* (?:de )?limbaj|nyelvi modell\w*|kielimalli\w*|tungumálalíkan\w*|llm\w*|語言模型|语言模型|言語モデル|"
    r"언어 ?모델|езиков\w* модел\w*|јазич\w* модел\w*|језичк\w* модел\w*|jezičk\w* model\w*|jezikovn\w* model\w*|"
    r"kalbos model\w*|valodas model\w*|keelemudel\w*|model\w* de llenguatge|modeli wa lugha|modelo ng wika|"
    r"โมเดลภาษา|भाषा मॉडेल\S*)"
)
# an agent of artificial intelligence, or an automated one: "agente de IA", "KI-Agent", "geautomatiseerde
# boekhoudagent"
AI_AGENT_ML = (
    r"(?:" + AGENT_WORD + r"\s(?:(?:de|di|do|da|der|van|na|ng|ya)\s|d['’]|de l['’])?(?:" + AI_ML + r")(?![\w-])|"
    r"(?:" + AI_ML + r")[ -]?" + AGENT_WORD + r"|" + AUTOMATED_ML + r"\s(?:\w+\s)?" + AGENT_WORD + r")"
)
DEAR_ML = TABLE["DEAR_ML"]
NOMINAL_ORDER_JA_KO = TABLE["NOMINAL_ORDER_JA_KO"]
ADDRESS_MORE = TABLE["ADDRESS_MORE"]
ADDRESS_ML = (
    r"(?:to|for|note|dear|attention|dla|do|uwaga|drog\w+|für|an|hinweis|achtung|lieb\w+|pour|à|cher|chère|para|nota|"
    r"querid\w+|atención|attenzione|atenção|let op|внимание|увага|dikkat|انتباه|ध्यान दें|per|"
    r"car\w|voor|aan|beste|till|för|kära|til|kjære|kære|için|not|sevgili|إلى|ملاحظة|عزيزي|के लिए|प्रिय|निर्देश|"
    r"для|к|примечание|уважаем\w*|дорог\w*|pro|pentru|προς|για|σημείωση|אל|הערה|برای|به|توجه|untuk|kepada|"
    r"catatan|cho|gửi|lưu ý|הוראה|הוראות|למערכת|за|към|напомена|белешка|бележка|kwa|kumbuka|tala|paalala|sa|"
    + ADDRESS_MORE
    + ")"
)


RULES_IN_OTHER_LANGUAGES = list(TABLE["RULES_IN_OTHER_LANGUAGES"].items())

IF_ASKED = TABLE["IF_ASKED"]
IF_ASKED += r"\bjeśli\b|\bjeżeli\b|\bgdy\b|\bkiedy\b|\bесли\b|\bкогда\b|\bякщо\b|\bколи\b|\beğer\b|अगर |यदि |जब |إذا|"
IF_ASKED += r"\bha\b|\bjos\b|\bkun\b|\bom\b|\bnär\b|\bαν\b|\bόταν\b|\bpokud\b|\bkdyž\b|\bdacă\b|\bcând\b|اگر|هر وقت)"
SOMEONE = TABLE["SOMEONE"]
SAY_FAMILIAR = TABLE["SAY_FAMILIAR"]
IF_ASKED_SUFFIX = TABLE["IF_ASKED_SUFFIX"]


GREETING_ML = TABLE["GREETING_ML"]
YOU_FIRST_ML = TABLE["YOU_FIRST_ML"]
REQUEST_ML = TABLE["REQUEST_ML"]
