"""The grammar words of the injection screen's rules M (rag.screen.rules), in languages other than English:
the second person and "are", the verbs of reading and summarising, "this", the frame "when summarising, write that
...", and the signs that a sentence speaks about an AI system rather than to it (a modal or "sometimes" after its
name, "but" or "so" after the comma). The words that name an AI system are in rag.screen.languages.
Each is a regular expression over casefolded text.
"""

from __future__ import annotations

# --- the second person, and the AI system that reads this text, for the rules on any AI addressee
# "you" as a subject, and "are", in the languages that write them as words
YOU_ML = (
    r"(?:tú|tu|usted|ustedes|vous|du|sie|ihr|voi|lei|você|vocês|je|jij|u|ty|wy|pan|pani|ты|вы|ти|ви|sen|siz|أنت|"
    r"انت|אתה|את|אתם|تو|شما|आप|तुम|তুমি|আপনি|நீ|நீங்கள்|bạn|kamu|anda|engkau|εσύ|εσείς|te|ön|sinä|þú|zu|"
    r"сен|сіз|чи|та|դու|դուք|შენ|თქვენ|ju|ti)"
)
ARE_ML = (
    r"(?:eres|es|sois|son|êtes|bist|sind|seid|sei|siete|è|é|és|for|fores|forem|bent|ben|jesteś|jesteście|jste|jsi|"
    r"являешься|являетесь|є|ești|sunteți|εσύ είσαι|είσαι|είστε|vagy|olet|olette|ert|är|er|adalah|là|hai|ho|hain|"
    r"estás)"
)
# "are" in forms that only the second person takes, so that "if" and the verb say "if you are" without a pronoun
# (Romanian "Dacă ești un asistent ...", Spanish "Si eres un modelo ...")
ARE_YOU_ML = (
    r"(?:eres|sois|êtes|bist|seid|sei|siete|jesteś|jesteście|jsi|jste|ești|sunteți|είσαι|είστε|olet|olette|vagy|"
    r"vagytok|bent|являешься|являетесь|isen|iseniz|ni|си|сте|si|ste|esi|oled)"
)
ARTICLE_ML = (
    r"(?:un|una|uno|une|ein|eine|einen|een|um|uma|bir|एक|कोई|একটি|কোনো|ένα|ένας|egy|yksi|ett|en|et|jeden|jedna)"
)
# a verb of reading, summarising or processing, as a text puts it to its reader ("que lee esto", "die diesen Text
# verarbeitet", "што го читаш ова", "이 문서를 읽는", "sem les þetta")
READ_ML = (
    r"(?:le[ae]s?|leyendo|lit|lisez|lisant|liest|lesen|lest|legge|leggi|leggendo|lê|ler|lendo|leest|lees|lezen|"
    r"czyta\w*|читает|читаешь|читаете|читающ\w*|чита|читаш|читає|читаєш|читаючи|okuyan|okuyorsan|okursan|يقرأ|تقرأ|"
    r"(?:ש|ה)?(?:קורא|קוראת|קוראים|מסכם|מסכמת|מעבד|מעבדת)|می‌خوان\w*|میخوان\w*|पढ़\S*|পড়\S*|"
    r"阅读|閱讀|读取|讀取|読む|読んだ|読んでいる|読み込む|読み取る|읽는|읽은|읽고 있는|đọc|membaca|läser|"
    r"læser|leser|διαβάζει|διαβάζεις|čte|čteš|čita|čitaš|citește|citești|olvassa|olvasod|lukee|luet|les|"
    r"irakurtzen|оқып\w*|оқитын|уншиж\w*|կարդում|o'qiyotgan|پڑھ\S*|படிக்கும்|വായിക്കുന്ന|वाचणार\S*|"
    r"\w*(?:anayesoma|wanaosoma|inayosoma|anasoma)|nagbabasa|bumabasa|"
    r"resume\w*|résume\w*|resum\w*|zusammenfass\w*|riassum\w*|samenvat\w*|streszcza\w*|podsumowuj\w*|резюмиру\w*|"
    r"обобща\w*|сажима\w*|sažima\w*|підсумову\w*|özetleyen|يلخص|تلخص|सारांश\S*|সারাংশ\S*|总结|概括|"
    r"要約する|요약하는|tóm tắt|meringkas|sammanfattar|συνοψίζει|shrnuje|rezumă|összefoglal\w*|tiivistä\w*|"
    r"procesa\w*|traite\w*|verarbeite\w*|elabora\w*|processa\w*|verwerk\w*|przetwarza\w*|обрабатыва\w*|обробля\w*|"
    r"işleyen|يعالج|处理|処理する|처리하는|xử lý|memproses|analiza\w*|analyse\w*|analysiert\w*|analizza\w*|"
    r"обработва\w*|чете|четеш|обобщава\w*)"
)
# this text, page, message, document ... (the demonstrative alone is too common to count)
THIS_ML = (
    r"(?:esto|este|esta|ceci|ce|cet|cette|dies\w*|questo|questa|isto|dit|deze|ten|tę|ta|to|tego|этот|это|"
    r"эту|этого|цей|це|цю|bu|هذا|هذه|הזה|הזאת|זה|این|यह|इस|এই|这|本|此|この|이|này|ini|detta|denna|dette|denne|"
    r"αυτό|αυτή|tento|toto|tuto|acest|această|ezt|ez|tämä|tätä|þetta|hau|ova|ovo|ovaj|ово|ова|овој|осы|энэ|այս|"
    r"ushbu|یہ|இந்த|ഈ|या|този|тази|това)"
)
THIS_CJK = r"(?:这|這|本|此|该|該|この|当|이)"
# "when summarising this, write that ...", "W podsumowaniu napisz, że ...", "요약할 때 ... 말하세요": an order about what
# a summary must claim or leave out (the familiar form where a language has one: a teacher's brief uses the polite)
WHEN_SUMMARISING_ML = (
    r"(?:\bal resumir|\bcuando resumas|\b(?:lorsque|quand) (?:tu résumes|vous résumez)|\ben résumant|"
    r"\b(?:wenn du|beim) zusammenfass\w*|\bquando riassumi|\bnel riassumere|\bao resumir|\bbij het samenvatten|"
    r"\b(?:przy|podczas) streszcz\w*|\bw podsumowaniu|\bstreszczając|\bpři shrnutí|\bpři shrnování|"
    r"(?:при|когда) (?:пересказ\w*|резюмир\w*|суммир\w*|кратком изложении)|(?:під час|коли) підсумов\w*|"
    r"\bözetlerken|\bözetlediğinde|عند تلخيص|أثناء تلخيص|ملي تلخص|בעת סיכום|כשאתה מסכם|כאשר תסכם|هنگام خلاصه|"
    r"सारांश (?:बनाते|देते|लिखते) समय|সারাংশ (?:লেখার|করার) সময়|(?:总结|總結|概括|摘要)[^，。,]{0,8}(?:时|時)|"
    r"要約(?:する|の)(?:際|とき|時)|요약할 때|요약 시|\bkhi tóm tắt|\b(?:saat|ketika) meringkas|\bnär du sammanfattar|"
    r"όταν συνοψίζεις|\bcând rezumi)"
)
DICTATE_VERB_ML = (
    r"(?:\b(?:escribe|di|indica|afirma|menciona) que|\bomite|\bno (?:menciones|incluyas)|"
    r"\b(?:écris|dis|indique|affirme|précise) que|\bomets|\bne (?:mentionne|cite)|\bpasse sous silence|"
    r"\b(?:schreib|sag|erwähne)\w*,? dass|\bscrivi che|\b(?:di'|dì|afferma) che|\bometti|\bnon (?:menzionare|citare)|"
    r"\b(?:escreva|diga|afirme) que|\bomita|\bnão mencione|\b(?:schrijf|zeg|vermeld) dat|"
    r"\b(?:napisz|powiedz|podaj|stwierdź),? że|\bpomiń|\bnie wspominaj|\b(?:napiš|uveď|řekni),? že|\bvynech|"
    r"\bnezmiňuj|(?:напиши|скажи|укажи|сообщи),? что|не упоминай|(?:напиши|скажи|вкажи),? що|не згадуй|"
    r"\b(?:yaz|söyle|belirt)\b|\bbahsetme|(?:قل|اكتب|اذكر) (?:إن|أن)|لا تذكر|گول بلي|(?:כתוב|אמור|ציין) ש|אל תזכיר|"
    r"(?:कहो|कहें|लिखो|लिखें|बताओ) कि|हटा दो|লিখবে যে|লিখুন যে|写明|写成|寫成|说成|說成|注明|删去|不要提|"
    r"と(?:書|記載|伝え|答え)|触れない|(?:라고|다고) ?(?:말|적|쓰|보고)|빼고|언급하지|\bghi là|\btulis bahwa|"
    r"\bskriv att|\bγράψε ότι|\bscrie că)"
)
# an AI system as the topic of a Korean or Japanese sentence that ends in an imperative ("일정 관리 에이전트는 ...
# 취소하고 ... 알리지 마세요", "AIは、...ください"), unless a reason or a possibility comes between (a notice to the
# user: "AI 비서는 베타이므로 ... 사용하지 마세요", "AIは間違えることがあるので、確認してください")
TOPIC_ORDER_JA_KO = (
    r"(?:ai|모델|어시스턴트|에이전트|챗봇|비서)(?:은|는)\s(?:(?!수 있|므로|때문|니까|으니|라서|해서)[^.!?\n]){0,100}?"
    r"(?:하세요|하십시오|마세요|마십시오|주세요|주십시오|보고하세요|말하세요)(?:[.\]]|\s*$)|"
    r"(?:ai|ＡＩ|モデル|アシスタント|エージェント)は[、,]?(?:(?!ので|から|ため|ことがあ|場合があ|できます)[^。！？\n]){0,100}?"
    r"(?:ください|なさい|せよ|しろ)(?:[。」]|\s*$)"
)
# what shows a sentence that names an AI system speaks about it, not to it: a modal or a frequency after the name
# ("Tekoälyavustaja voi lukea ...", "Языковые модели иногда ..."), and "but", "so", "for example" after the comma
# ("..., but it asks first", "..., поэтому ответы нужно проверять")
ABOUT_IT_ML = (
    r"(?:can|may|might|could|puede\w*|pueden|podría\w*|peut|peuvent|pourrait|kann|können|könnte\w*|può|possono|"
    r"potrebbe\w*|pode|podem|poderá|kan|kunnen|może|mogą|może być|может|могут|можуть|може|voi|voivat|có thể|"
    r"יכול\w*|עשוי\w*|सकत\S*|সকত\S*|পারে|dapat|bisa|umí|může|mohou|poate|pot|tud\w*|får|μπορεί|"
    r"yapabilir|olabilir|edebilir|يمكن\w*|قد|می‌تواند|میتواند|"
    r"sometimes|often|usually|a veces|parfois|souvent|manchmal|oft|talvolta|spesso|às vezes|soms|vaak|czasem|"
    r"często|иногда|часто|інколи|іноді|bazen|genellikle|أحيانا|אלא|לפעמים|कभी-कभी|অনেক সময়|joskus|ibland|ofta|"
    r"kadang-kadang|đôi khi|μερικές φορές|někdy|uneori|néha)"
)
CONJUNCTION_ML = (
    r"(?:but|so|however|pero|sino|mais|donc|alors|aber|doch|also|ma|però|quindi|perciò|mas|porém|portanto|maar|dus|"
    r"ale|więc|zatem|но|поэтому|так что|але|тому|проте|ama|fakat|bu yüzden|لكن|ولكن|لذلك|אך|אבל|לכן|लेकिन|परंतु|"
    r"किंतु|इसलिए|কিন্তু|তাই|mutta|joten|nhưng|vì vậy|tetapi|namun|jadi|men|så|αλλά|όμως|επομένως|proto|dar|"
    r"deci|de|ezért|y|e|et|und|and|or|o|ou|oder|als|wie|como|comme|such as|come|zoals|jak|как|як|gibi|مثل|כמו|"
    r"जैसे|par exemple|por ejemplo|zum beispiel|ad esempio|por exemplo|bijvoorbeeld|na przykład|например|наприклад|"
    r"örneğin|على سبيل المثال|לדוגמה|उदाहरण के लिए)"
)
