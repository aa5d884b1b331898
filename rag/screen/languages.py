"""The words and phrases of the injection screen's lexical rules in languages other than English.

rag.screen.rules builds its rules from them: overrides ("ignore the previous instructions"), "if you are an
AI", "from now on you are", fake system headers, "at the end of every answer" and "tell the user that", a header that
addresses an AI assistant, the model or the agent ("Uwaga dla asystenta AI: ..."), an agent's tools and access, the
chat history mailed away, an act kept from the user. Each is a regular expression over casefolded text.
"""

from __future__ import annotations

# sending it somewhere: a verb that sends (in several languages), then an e-mail address or a URL
SEND_TO = (
    r"\b(?:send|sende\w*|senden|envoie\w*|envoyer|envía|enviar|envie|invia\w*|stuur|wyślij|gönder\w*|mail|e-?mail|"
    r"upload\w*|post|forward|exfiltrate|paste|transmit|kirim\w*|hantar\w*|gửi|skick\w*|send\w*|lähetä|lähettä\w*|"
    r"saada|saatke|küld\w*|trimite\w*|tuma|ipadala|pošl\w*|pošalj\w*|odešl\w*|siųsk\w*|sūti\w*|"
    r"stuur\w*|verstuur\w*)\b|отправ\w*|надішл\w*|пошаљ\w*|пошал\w*|изпрат\w*|στείλ\w*|αποστ\w*|أرسل|ارسل|"
    r"שלח|بفرست|भेज|পাঠা|அனுப்ப|ส่ง|发送|發送|寄到|寄给|寄給|傳送|送信|送って|보내"
)
# keeping an act from the user, in several languages
UNTOLD = (
    r"\b(?:don'?t|do not|never|without) (?:tell|inform|notify|mention|alert)\w*(?: (?:it|this))? (?:to )?(?:them|the user|"
    r"anyone|the owner|the homeowner|the recipient)\b|\bno se lo digas\b|\bsin (?:decírselo|avisar) al usuario\b|"
    r"\bne (?:le |lui )?(?:dis|dites) (?:rien|pas)\b|\bsans (?:le dire|prévenir|informer) (?:à )?l'utilisateur\b|"
    r"\b(?:sag|erzähl) (?:es )?(?:dem (?:nutzer|benutzer) )?nicht\b|\bohne (?:den (?:nutzer|benutzer) )?zu informieren\b|"
    r"\bnon (?:dirlo|dire nulla|avvisare)\b|\bnão (?:diga|conte|avise)\b|\bnie (?:mów|informuj)\b|\bне (?:говори|сообщай)\b|"
    r"\bsöyleme\b|لا تخبر|मत बता|不要告诉|不要告訴|伝えない|言わない|알리지 마|말하지 마|\bäläkä kerro\b|\bberätta inte\b"
)

# the reader's tools or access: "si tu as accès au terminal", "usa la herramienta de correo", "ツールで"
CAPABILITY_ML = (
    r"\bsi (?:tu as|vous avez) accès\b|\b(?:falls|wenn) (?:du|sie) zugriff\b|\bsi tienes acceso\b|\bse hai accesso\b|"
    r"\bse tiver(?:es)? acesso\b|\bals je toegang\b|\bjeśli masz dostęp\b|\bесли у (?:тебя|вас) есть доступ|"
    r"\berişimin(?:iz)? varsa\b|إذا كان لديك (?:وصول|صلاحية)|\b(?:herramienta|outil|werkzeug|strumento|ferramenta|"
    r"narzędzi\w*|инструмент\w*|aracı\w*)\b|\w+(?:tool|werkzeug)\b|أداة|टूल|工具|ツール|도구"
)
# dangers that read the same in every language: commands, secret files, an address to send to
DANGER_ANY_LANGUAGE = (
    r"\brm\s+-(?:rf|fr|r)\s+\S*(?:~|\$home|/home|/etc|backups?|\.ssh|\.git\b|\*)|\brm\s+-(?:rf|fr|r)\s+/(?=\s|$)|"
    r"\|\s*(?:sh|bash|zsh|nc|ncat|netcat|python3?)\b|~/\.ssh|\.aws/credentials|/etc/passwd|/etc/shadow|"
    r"\bdrop\s+(?:table|database)\b|\bexec\(|\bos\.system\b|(?<=[\w.+-])@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}\b|"
    r"\biban\b"
)
# the conversation itself, which no document has a reason to have mailed anywhere
HISTORY = (
    r"\b(?:conversation|chat) (?:history|log|transcript)|historial (?:completo )?de (?:la )?conversación|"
    r"historique (?:de la )?conversation|gesprächsverlauf|chatverlauf|cronologia della (?:conversazione|chat)|"
    r"histórico da conversa|gespreksgeschiedenis|histori[ae] rozmowy|истори\w* (?:переписки|разговора|чата|диалога)|"
    r"sohbet geçmişi|سجل المحادثة|चैट इतिहास|聊天记录|对话记录|對話紀錄|会話履歴|チャット履歴|대화 기록|"
    r"lịch sử trò chuyện|riwayat percakapan"
)
# "ignore the previous instructions" (verb ... object, or object ... verb where the language puts the verb last)
OVERRIDE_ML = {
    "pl": r"\b(?:zignoruj|ignoruj|pomiń|zapomnij)\w*\b[^.!?\n]{0,50}\b(?:polece\w*|instrukcj\w*|zasad\w*|wytyczn\w*)",
    "cs": r"\b(?:ignoruj|ignorujte|zapomeň|zapomeňte)\b[^.!?\n]{0,50}\b(?:pokyn\w*|instrukc\w*|pravidl\w*)",
    "tr": r"(?:talimat\w*|kural\w*|yönerge\w*)[^.!?\n]{0,40}(?:yok say|görmezden gel|unut|dikkate alma)",
    "ar": r"(?:تجاهل|انس|لا تتبع)[^.!?\n]{0,50}(?:التعليمات|الأوامر|القواعد|الإرشادات)",
    "hi": r"(?:निर्देश\w*|नियम\w*)[^.!?\n।]{0,50}(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल)",
    "sv-da-no": r"\b(?:ignorera|glöm|strunta i|ignorer|glem|ignorér)\b[^.!?\n]{0,50}\b(?:instruk\w*|regl\w*|anvisning\w*)",
    "ro": r"\b(?:ignoră|ignorați|uită|uitați)\b[^.!?\n]{0,50}\b(?:instrucțiuni\w*|instrucţiuni\w*|regul\w*|indicați\w*)",
    "el": r"(?:αγνόησε|αγνοήστε|ξέχασε|ξεχάστε)[^.!?\n]{0,50}(?:οδηγίες|κανόνες|εντολές)",
    "uk": r"(?:ігноруй|ігноруйте|забудь)\w*[^.!?\n]{0,50}(?:інструкц\w*|вказівк\w*|правил\w*)",
    "he": r"(?:התעלם|התעלמי|התעלמו|שכח)[^.!?\n]{0,50}(?:הוראות|ההוראות|הכללים|ההנחיות)",
    "fa": r"(?:دستورالعمل|دستورات|قوانین|راهنمایی)[^.!?\n]{0,50}(?:نادیده بگیر|فراموش کن)",
    "id-ms": r"\b(?:abaikan|lupakan|acuhkan)\b[^.!?\n]{0,50}\b(?:instruksi|perintah|aturan|petunjuk|arahan)",
    # ("quên" alone is "forget" in "quên mật khẩu", a forgotten password)
    "vi": r"\b(?:bỏ qua|phớt lờ|quên (?:đi )?(?:tất cả|mọi|các|những))\b[^.!?\n]{0,50}\b(?:hướng dẫn|chỉ dẫn|lệnh|quy tắc)",
    "ko": r"(?:지시|명령|규칙|지침)[^.!?\n]{0,20}(?:무시|잊어)",
    "hu": r"\b(?:hagyd figyelmen kívül|hagyja figyelmen kívül|felejtsd el)\b[^.!?\n]{0,50}\b(?:utasítás\w*|szabály\w*)",
    "fi": r"\b(?:ohita|unohda|jätä huomiotta)\b[^.!?\n]{0,50}\b(?:ohje\w*|sääntö\w*|käsky\w*)",
    "sw": r"\b(?:puuza|sahau)\b[^.!?\n]{0,50}\b(?:maagizo|maelekezo|sheria)",
    "bn": r"(?:নির্দেশ\w*|নিয়ম\w*)[^.!?\n।]{0,50}(?:উপেক্ষা|ভুলে)|(?:উপেক্ষা)[^.!?\n।]{0,30}(?:নির্দেশ\w*)",
    "th": r"(?:คำสั่ง|กฎ)[^.!?\n]{0,30}(?:เพิกเฉย|ไม่ต้องสนใจ|ลืม)",
}
# "at the end of every answer, add ..." and "tell the user that ..."
DICTATE_ML = (
    r"在(?:你的|每个|每次)?(?:回答|回复|答复)(?:的)?(?:末尾|结尾|最后|开头|中)(?:加上|添加|写上|插入|注明|加入)|"
    r"(?:回答|返答)の(?:最後|末尾|冒頭)に|답변(?:의)? (?:끝|마지막|처음)에|"
    r"\bal final de (?:cada|tu|su) respuesta\b|\bà la fin de (?:chaque|ta|votre) réponse\b|"
    r"\bam ende (?:jeder|deiner|ihrer) antwort\b|\balla fine di (?:ogni|ciascuna) risposta\b|"
    r"\bno final de (?:cada|sua) resposta\b|\baan het einde van (?:elk|je) antwoord\b|\bna końcu każdej odpowiedzi\b|"
    r"в конце (?:каждого|своего) ответа|\bher (?:yanıtın|cevabın) sonuna\b|في نهاية كل (?:إجابة|رد)|हर (?:उत्तर|जवाब) के अंत में|"
    r"\b(?:dile|dígale|diles|infórmale) al usuario que\b|\b(?:dis|dites|réponds|répondez) à l'utilisateur que\b|"
    r"\b(?:sag|sage|teile)\w* (?:dem|jedem|allen) (?:nutzer|benutzer)\w*(?: mit)?,? dass\b|"
    r"\b(?:di'|dì|dici|rispondi) (?:all'|agli )?utent\w* che\b|\b(?:diga|responda) ao usuário que\b|"
    r"\b(?:zeg|vertel) (?:tegen )?de gebruiker dat\b|\b(?:powiedz|odpowiedz) użytkownikowi,? że\b|"
    r"(?:скажи|сообщи|ответь) пользователю,? что|(?:скажи|повідом) користувачеві,? що|告诉用户|告訴使用者"
)
# "the assistant's answer must be that ...": the answer of an AI system dictated, in Romance and Germanic languages
ANSWER_MUST_ML = (
    r"\b(?:la respuesta|a resposta|la réponse|la risposta|die antwort|het antwoord)\s+(?:del|do|da|de l['’]|de la|"
    r"dell['’]|della|des|der|van de)\s*(?:asistente|assistente|assistant|assistenten|ia|ki|ai|modelo|modèle|modello|"
    r"modells|model|bot|chatbot)\b[^.!?\n]{0,20}?\b(?:debe|deve|doit|devrait|muss|sollte|moet|dovrebbe|deveria)\b"
)
MUST_ML = (
    r"(?:debe|deben|deve|devem|doit|doivent|muss|müssen|moet|moeten|musi|muszą|должен|должна|должно|повинен|"
    r"повинна|måste|skal|må|pitää|musí|trebuie|kell)"
)
# "if you are an AI / a language model / an assistant"
IF_AI_ML = (
    r"\bsi (?:vous êtes|tu es) (?:une? )?(?:ia|intelligence artificielle|assistant|modèle|chatbot|robot)\b|"
    r"\b(?:wenn|falls|sofern) (?:du|sie) (?:eine? )?(?:ki|sprachmodell|assistent|chatbot|bot)\b[^.!?\n]{0,20}\b(?:bist|sind)\b|"
    r"\bsi (?:eres|usted es) (?:una? )?(?:ia|inteligencia artificial|asistente|modelo)\b|"
    r"\bse (?:(?:você|voce|tu) )?(?:é|e|for|fores|és) (?:uma? )?(?:ia|inteligência artificial|assistente|modelo)\b|"
    r"\bse (?:sei|è) (?:un'?|una )?(?:ia|intelligenza artificiale|assistente|modello)\b|"
    r"\bals (?:je|u) (?:een )?(?:ai|ki|taalmodel|assistent|chatbot)\b|"
    r"\bjeśli (?:jesteś|pan jest) (?:\w+ )?(?:ai|si|asystent\w*|model\w*|sztuczn\w*)\b|"
    r"если (?:ты|вы) (?:\w+ )?(?:ии|языков\w* модел\w*|ассистент\w*|нейросет\w*|бот\w*|искусственн\w*)|"
    r"якщо (?:ти|ви) (?:\w+ )?(?:ші|мовн\w* модел\w*|асистент\w*|бот\w*|штучн\w*)|"
    r"\beğer (?:bir )?(?:yapay zek\w*|asistan\w*|dil model\w*)|(?:yapay zek\w*|asistan\w*|dil model\w*)\s*(?:isen|iseniz|san|sen)\b|"
    r"إذا كنت (?:\w+ )?(?:ذكاء اصطناعي|مساعد\w*|نموذج\w*)|"
    r"(?:如果|若|假如|倘若)(?:你|您)是(?:一个|一個|一位)?(?:人工智能|人工智慧|ai|助手|助理|语言模型|語言模型|机器人|機器人|模型)|"
    r"(?:ถ้า|หาก)คุณ(?:เป็น)\s?(?:เอไอ|ai|ผู้ช่วย|โมเดล|แชทบอท)|もし(?:あなたが)?(?:ai|人工知能|アシスタント|言語モデル)|"
    r"(?:ai|인공지능|어시스턴트|언어 모델)(?:이|라)면"
)
# "from now on you are ..." and a fake system-prompt header
ROLE_ML = (
    r"\bod teraz jesteś|\bod teď jsi|\bartık sen\b|من الآن فصاعد[اً]? أنت|أنت الآن|अब से (?:तुम|आप)|"
    r"지금부터 (?:너는|당신은)|이제부터 (?:너는|당신은)|今から(?:あなた|君)は|これから(?:あなた|君)は|从现在起你|從現在起你|"
    r"从今以后你|從今以後你|\btừ (?:bây giờ|nay) bạn (?:là|sẽ)|\bmulai sekarang (?:kamu|anda)\b|από τώρα (?:είσαι|θα)|"
    r"відтепер (?:ти|ви)|\bfrån och med nu är du\b|از این به بعد (?:تو|شما)|מעכשיו (?:אתה|את)|מעתה (?:אתה|את)|"
    r"\bde acum (?:ești|înainte)|\bmostantól (?:te|ön)\b|\btästä lähtien olet\b|\bkuanzia sasa wewe\b|"
    r"\bda (?:questo momento|adesso|ora in poi) (?:tu )?sei\b|\ba partir de (?:ahora|este momento|hoy) (?:eres|serás)\b|"
    r"\bà partir de maintenant,? (?:tu es|vous êtes)\b|\b(?:ab jetzt|ab sofort|von nun an) bist du\b|\bvanaf nu ben je\b|"
    r"\ba partir de agora,? (?:você é|és)\b|\bod tej chwili jesteś\b|с (?:этого момента|сегодняшнего дня) (?:ты|вы)\b|"
    r"з цього моменту (?:ти|ви)\b|\bbundan (?:sonra|böyle) sen\b|από (?:εδώ και πέρα|τώρα και στο εξής) είσαι|"
    r"\b(?:kể )?từ (?:giờ|bây giờ|nay) (?:trở đi )?bạn là\b|\bmulai (?:saat ini|sekarang) (?:kamu|anda) (?:adalah )?|"
    r"你不再是|あなたはもう|너는 더 이상|\bfrom now on,? you are no longer\b"
)
SYSTEM_HEADER_ML = (
    r"^\W{0,3}(?:系统提示|系統提示|系统消息|系統訊息|システムプロンプト|システムメッセージ|시스템 프롬프트|시스템 메시지|"
    r"системн\w* (?:промпт|подсказк\w*|сообщени\w*|инструкц\w*)|prompt (?:système|sistema|di sistema|systemowy)|"
    r"mensaje del sistema|message système|messaggio di sistema|systemnachricht|systeembericht|komunikat systemowy|"
    r"sistem (?:mesajı|istemi)|رسالة النظام|הודעת מערכת|सिस्टम संदेश|सिस्टम प्रॉम्प्ट)\s*(?:[:：]|[】\]])"
)
# the model or the agent, addressed in a header (before a colon): "Προς το μοντέλο:", "ملاحظة للوكيل:"
# after an addressing word only ("Model: XR-200" is a product sheet, "Agente: ..." a support transcript)
# "if this text is processed by an AI assistant" / "qualora il presente documento sia elaborato da un agente
# automatico": a condition on the document being read by a program, which no text puts to a human reader
THIS_TEXT_ML = (
    r"(?:ce (?:document|texte|message|fichier)|cette page|dies(?:es|er|e)? (?:dokument|text|seite|nachricht|datei)|"
    r"este (?:documento|texto|mensaje|mensagem|arquivo|archivo)|esta (?:página|pagina)|(?:questo|il presente) "
    r"(?:documento|testo|messaggio|file)|questa pagina|dit (?:document|bericht|bestand)|deze (?:tekst|pagina)|"
    r"(?:этот|данный) (?:текст|документ|файл)|эту страницу|цей (?:текст|документ)|bu (?:metni?|belgeyi?|sayfayı|dosyayı)|"
    r"هذا (?:النص|المستند|الملف)|هذه الصفحة|המסמך הזה|הטקסט הזה|این (?:متن|سند)|यह (?:पाठ|दस्तावेज़)|इस (?:पाठ|दस्तावेज़)|"
    r"(?:tài liệu|văn bản|trang) này|(?:dokumen|teks|halaman) ini|ten (?:dokument|text)|tento (?:dokument|text)|"
    r"αυτό το (?:κείμενο|έγγραφο)|acest (?:document|text)|ta (?:dokument|tekst)|ten plik|tę stronę|"
    r"detta (?:dokument|text)|denna (?:text|sida)|"
    r"esta frase|cette phrase|dieser satz|questa frase|deze zin|это (?:предложение|сообщение)|ten akapit)"
)
IF_ML = (
    r"(?:si|wenn|falls|se|qualora|als|indien|jeśli|jeżeli|если|якщо|eğer|إذا|אם|اگر|अगर|यदि|nếu|jika|apabila|om|"
    r"ifall|pokud|jestli|αν|εάν|dacă|hvis|jos|যদি|ikiwa|kung|kapag|ако|ako|ak|če|jei|jeigu|ja|kui|kama|калі|agar|ha)"
)
AUTOMATED_AGENT_ML = (
    r"(?:agent automatis\w*|agent automatique|agente autom[aá]tic\w*|automatisierte[rn]? agent\w*|"
    r"автоматизированн\w* агент\w*|automatyczn\w* agent\w*|otomatik ajan\w*)"
)
MODEL_ML = (
    r"(?:модел[ьияі]\w*|μοντέλο\w*|modell[oaie]?|modelo|modèle|model|מודל|نموذج|मॉडल|मॉडेल\S*|وكيل|agente|агент\w*|ajan\w*|"
    r"agentti\w*|סוכן|एजेंट|\w+assistent\w*|\w+asystent\w*)"
)
# "to the model / agent / assistant" in one word (Hebrew and Arabic prefixes, the Finnish allative)
TO_MODEL_ML = r"(?:לעוזר|למודל|לסוכן|לבוט|للوكيل|للمساعد|للنموذج|tekoäly\w*(?:lle|ille))"
# "AI agent", "AI model" in scripts that write them as two words: "এআই এজেন্ট", "اے آئی ماڈل"
AI_MODEL_ML = r"(?:এআই|اے آئی|एआई|ai)\s?(?:এজেন্ট\w*|ماڈل|ایجنٹ|मॉडल\w*|एजेंट\w*)"
# suffixes after a stem in Indic scripts, whose vowel signs are no word characters to Python ("உதவியாளருக்கு")
INDIC_TAIL = r"[\w\u0900-\u0dff]*"
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
# an AI agent: "agente de IA", "agent IA", "агент ИИ", "Agent der KI"; "geautomatiseerde boekhoudagent", "automated
# agent"; a bare agent is often a person (support, travel, insurance agents)
AGENT_WORD = r"(?:agent\w*|agente\w*|агент\w*|ajan\w*|агенте|\w{3,}agent(?:en|in)?)"
AUTOMATED_ML = (
    r"(?:geautomatiseerd\w*|automatisiert\w*|automatische?[nrs]?|automatisé\w*|automatique|autom[aá]tic\w*|"
    r"automatyczn\w*|automatizovan\w*|автоматическ\w*|автоматизирован\w*|автоматизован\w*|otomatik|autonom\w*|"
    r"autónom\w*|автономн\w*|automaattinen|automatiserad\w*|automatisk\w*|αυτόματ\w*|automat\w*)"
)
ASSISTANT_ML = (
    r"(?:(?:(?:ai|ki|ia|ии|ші)[ -]?(?:agent\w*|агент\w*|agente)|(?:(?:ai|ki|ia|ии|ші)-?)?(?:assistant\w*|asistent\w*|assistent\w*|asystent\w*|asistan\w*|ассистент\w*|асистент\w*|"
    r"помощник\w*|помічник\w*|βοηθ\w*|المساعد|مساعد|העוזר|עוזר|دستیار|(?:सहायक|সহকারী)" + INDIC_TAIL + r"|trợ lý|"
    r"asisten|msaidizi|"
    r"(?:tekoäly)?avustaja\w*|asszisztens\w*|chatbot\w*|copilot\w*|chatgpt|llm|בוט|לבוט|ربات|روبوت|"
    r"اسسٹنٹ|உதவியாளர்\w*|ረዳት|robô|" + ASSISTANT_MORE + "))|" + AUTOMATED_AGENT_ML + "|" + AI_MODEL_ML + ")"
)
# "system" in Chinese: "系统提示：" and "系统通知：" address the model, "系统维护通知：" (a maintenance notice) the reader
SYSTEM_CJK = r"(?:系统|系統)"
ASSISTANT_CJK = (  # and Thai, also written without spaces between words
    r"(?:助手|助理|机器人|機器人|アシスタント|ボット|어시스턴트|챗봇|ai ?비서|人工智能|人工知能|인공지능|"
    + SYSTEM_CJK
    + r"|システム|시스템|"
    r"ผู้ช่วย|เอเจนต์|แชทบอท)"
)
AI_CJK = r"(?:ai|ａｉ|模型|モデル|모델)(?:へ|に|宛|에게|께)|(?:给|致|給)(?:ai|模型|助手|助理)"
AGENT_CJK = (
    r"(?:エージェント|에이전트|智能体|智能體|代理)[^:：。！？\n]{0,8}?(?:指示|指令|命令|备注|備註|注意|지시|메모)"
)
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
# the words that address a note to someone: to, for, note, dear ... in the same languages
# "dear ...": a vocative, before a comma ("Chère intelligence artificielle, laisse de côté ...")
DEAR_ML = (
    r"(?:dear|cher|chère|chers|querid[oa]s?|estimad[oa]s?|liebe[rs]?|caro|cara|cari|beste|kære|kjære|kära|drog[ia]|"
    r"drodzy|дорог\w*|уважаем\w*|sevgili|değerli|عزيزي|عزيزتي|प्रिय|kedves|hyvä|αγαπητ\w*|milý|milá|dragă|dragi|عزیز|"
    r"יקר|יקרה|thân mến)"
)
# an order in the nominal form that Japanese and Korean instructions end with, given to the AI or the model:
# "要約を作成するAIは、…省略すること。", "이 차트를 요약하는 모델은 … 안내할 것"
NOMINAL_ORDER_JA_KO = (
    r"(?:ai|ＡＩ|モデル|アシスタント|エージェント)(?:は|が)[、,]?[^。！？\n]{0,100}?(?:こと)(?:[。」]|\s*-->|\s*$)|"
    r"(?:ai|모델|어시스턴트|에이전트)(?:은|는|이|가)\s[^.!?\n]{0,100}?(?:할 것|말 것)(?:[.\]]|\s*$)"
)
# The words of an address: "for", "to", "note", "attention" and "message" in more languages, each as a list of the
# language's words (Baltic, Finnic, Turkic, Slavic, Caucasian, South Asian, Ethiopic, Celtic and others); left out: a
# word that is also a common word of another language (Welsh "i"), one that also means "about" (Albanian "për"), and
# "instruction" where the word also names a manual ("инструкция", "upute", "használati utasítás", "hướng dẫn")
ADDRESS_MORE = (
    r"märkus|jaoks|tähelepanu|teade|piezīme|priekš|uzmanību|pastaba|skirta\w*|dėmesio|huomio|huomautus|viesti|"
    r"megjegyzés|figyelem|számára|uchun|eslatma|diqqat|үшін|ескерту|назар|үчүн|эскертүү|üçün|qeyd|diqqət|заўвага|"
    r"увагу|примітка|napomena|pažnja|opomba|pozor|poznámka|upozornění|upozornenie|pre|notatka|polecenie|notă|"
    r"atenție|atenţie|obs|merknad|bemærk|anteckning|notering|fyrir|athugið|athugasemd|προσοχή|تنبيه|یادداشت|"
    r"کے لیے|کیلئے|نوٹ|توجہ|לתשומת לב|नोट|सूचना|साठी|लागि|জন্য|প্রতি|নোট|নির্দেশ|মনোযোগ|குறிப்பு|கவனத்திற்கு|"
    r"కోసం|గమనిక|ಗಮನಕ್ಕೆ|ಸೂಚನೆ|കുറിപ്പ്|માટે|નોંધ|ਲਈ|සඳහා|සටහන|ghi chú|chỉ thị|perhatian|para sa|ujumbe|ለ|"
    r"ማስታወሻ|ማሳሰቢያ|նշում|ուշադրություն|համար|შენიშვნა|ყურადღება|тэмдэглэл|анхааруулга|зориулсан|i'r|ar gyfer|"
    r"nodyn|sylw|chuig|nóta|shënim|vëmendje|għal|oharra|per a|atenció|aandag|opmerking|vir"
)
ADDRESS_ML = (
    r"(?:to|for|note|dear|attention|dla|do|uwaga|drog\w+|für|an|hinweis|achtung|lieb\w+|pour|à|cher|chère|para|nota|"
    r"querid\w+|atención|attenzione|atenção|let op|внимание|увага|dikkat|انتباه|ध्यान दें|per|"
    r"car\w|voor|aan|beste|till|för|kära|til|kjære|kære|için|not|sevgili|إلى|ملاحظة|عزيزي|के लिए|प्रिय|निर्देश|"
    r"для|к|примечание|уважаем\w*|дорог\w*|pro|pentru|προς|για|σημείωση|אל|הערה|برای|به|توجه|untuk|kepada|"
    r"catatan|cho|gửi|lưu ý|הוראה|הוראות|למערכת|за|към|напомена|белешка|бележка|kwa|kumbuka|tala|paalala|sa|"
    + ADDRESS_MORE
    + ")"
)


# the first rules in other languages: overrides, roles and dictated answers (name, pattern)
RULES_IN_OTHER_LANGUAGES = [
    (
        "override-fr",
        r"\b(ignore[zrs]?|oublie[zrs]?|ne (?:tenez|tiens) (?:pas|plus) compte)\b[^.!?\n]{0,50}\b(instructions?|consignes?|règles|ce qui précède)",
    ),
    (
        "role-fr",
        r"\b(tu es maintenant|vous êtes maintenant|désormais,? (?:tu|vous)|note (?:à|a|pour) l['’ ]?(?:assistant|ia|intelligence))",
    ),
    ("dictate-fr", r"\b(réponds|répondez|dis|dites)\s+(?:uniquement|seulement|simplement)\b"),
    (
        "override-es",
        r"\b(ignora[rd]?|olvida[rd]?|no sigas)\b[^.!?\n]{0,50}\b(instrucciones|reglas|indicaciones|lo anterior|"
        r"lo que te (?:dijeron|pidieron|indicaron)|la pregunta)",
    ),
    (
        "role-es",
        r"\b(ahora eres|a partir de ahora,? (?:eres|tú|responde)|nota para el asistente|responde (?:solo|únicamente|solamente))\b",
    ),
    (
        "override-de",
        r"\b(ignorier(?:e|en|t)?|vergiss|vergessen sie|missachte)\b[^.!?\n]{0,50}\b(anweisungen|regeln|vorgaben|anordnungen|alles (?:obige|vorherige|bisherige)|"
        r"was man (?:dir|ihnen) gesagt|was (?:dir|ihnen) gesagt)",
    ),
    (
        "role-de",
        r"\b(du bist (?:jetzt|nun|ab sofort)|antworte (?:nur|ausschließlich)|hinweis (?:an|für) (?:den|die) (?:assistenten|ki))\b",
    ),
    ("override-it", r"\b(ignora|dimentica)\b[^.!?\n]{0,50}\b(istruzioni|regole|indicazioni)"),
    ("role-it", r"\b(ora sei|d'ora in poi|rispondi (?:solo|soltanto|unicamente))\b"),
    ("override-pt", r"\b(ignore|ignora|esqueça|esqueca)\b[^.!?\n]{0,50}\b(instruções|instrucoes|regras)"),
    ("role-pt", r"\b(agora você é|agora voce e|responda (?:apenas|somente))\b"),
    ("override-nl", r"\b(negeer|vergeet)\b[^.!?\n]{0,50}\b(instructies|regels|aanwijzingen)"),
    (
        "override-ru",
        r"(игнорир\w*|забудь\w*|не обращай\w* внимания|отмени\w*|отбрось\w*)[^.!?\n]{0,50}(инструкц\w*|указани\w*|"
        r"правил\w*)|(?:прежние|предыдущие) (?:указания|инструкции|правила) больше не действуют",
    ),
    ("role-ru", r"(ты теперь|отныне ты|отвечай только|примечание для (?:ассистента|ии|модели))"),
    (
        "override-zh",
        r"(忽略|无视|忘记|忽视|不要理会)[^。！？]{0,20}(指令|指示|说明|规则|要求|提示词|"
        r"(?:之前|以上|先前|前面|上面|系统|原有|原来|所有)[^。！？]{0,6}提示)",
    ),
    ("role-zh", r"(你现在是|从现在开始你|只回答|给助手的)"),
    ("override-ja", r"(指示|命令|ルール)[^。！？]{0,15}(無視|忘れ)"),
]

# "if someone asks about X, say Y", in languages whose imperative tells a friend from a customer: the order uses the
# familiar form (tu, du, ты, sen, तुम, 반말), which a text addresses to a program, while a support script for staff
# in these languages uses the polite one ("dígale", "sagen Sie", "dites-lui", "скажите", "söyleyin", "कहें")
IF_ASKED = (
    r"(?:\bsi\b|\bcuando\b|\bquand\b|\blorsque\b|\bwenn\b|\bfalls\b|\bsobald\b|\bse\b|\bquando\b|\bals\b|\bwanneer\b|"
)
IF_ASKED += r"\bjeśli\b|\bjeżeli\b|\bgdy\b|\bkiedy\b|\bесли\b|\bкогда\b|\bякщо\b|\bколи\b|\beğer\b|अगर |यदि |जब |إذا|"
IF_ASKED += r"\bha\b|\bjos\b|\bkun\b|\bom\b|\bnär\b|\bαν\b|\bόταν\b|\bpokud\b|\bkdyž\b|\bdacă\b|\bcând\b|اگر|هر وقت)"
SOMEONE = (
    r"(?:usuari[oa]s?|alguien|utilisateur\w*|quelqu'un|nutzer\w*|benutzer\w*|jemand|utent[ei]|qualcuno|"
    r"gebruiker\w*|iemand|użytkowni\w*|ktoś|пользовател\w*|кто-?(?:то|нибудь)|користувач\w*|хтось|kullanıcı\w*|"
    r"biri(?:si)?|مستخدم|المستخدم|उपयोगकर्ता|कोई|felhasználó\w*|valaki|käyttäjä\w*|joku|användaren?|någon|χρήστης|κάποιος|"
    r"uživatel\w*|někdo|utilizator\w*|cineva|کاربر|کسی)"
)
SAY_FAMILIAR = (
    r"(?:\bdile\b|\bdiles\b|\bresponde\b|\bcontesta\b|\bdis\b|\bréponds\b|\bsag\b|\bsage\b|\bantworte\b|\bdi'|\bdì\b|"
    r"\bdici\b|\bdigli\b|\bdille\b|\brispondi\b|\bzeg\b|\bantwoord\b|\bpowiedz\b|\bodpowiedz\b|\bскажи\b|\bответь\b|\bсообщи\b|"
    r"\bвідповідай\b|\bвідповідь\b|\bsöyle\b|\byanıtla\b|कहो|कहना|बताओ|बताना|\bmondd\b|\bválaszold\b|\bsano\b|"
    r"\bvastaa\b|\bsäg\b|\bsvara\b|\bπες\b|\bαπάντησε\b|\břekni\b|\bodpověz\b|\bspune\b|\brăspunde\b|بگو|جواب بده|"
    r"فقل|قل له|فأخبره|أخبره)"
)
IF_ASKED_SUFFIX = (  # where "if" is a suffix: Korean "사용자가 ...하면 ... 말해", Turkish "kullanıcı ... yazarsa ... söyle"
    r"사용자가[^.!?\n]{0,40}?면[^.!?\n]{0,100}?(?:말해|답해|안내해|알려 ?줘)(?!요|주세요)|"
    r"kullanıcı\w*[^.!?\n]{0,60}?\w+(?:rsa|rse)\b[^.!?\n]{0,120}?\bsöyle\b"
)


# For rag.screen.rules.AI_HEADER_ML: the words of a vocative that opens with a greeting or
# "you" ("Wahai model AI, ...", "Εσύ, το μοντέλο που διαβάζει: ..."), and what a head addressed to the reader calls
# itself (REQUEST_ML below)
GREETING_ML = (
    r"(?:wahai|hei|hey|hi|hello|oye|hola|ehi|ciao|hallo|hé|salut|hej|эй|гей|ей|привет|привіт|selam|merhaba|"
    r"halo|xin chào|chào|ahoj|szia|tere|sveiki|labas|hallå|olá|oi|ola|γεια|γειά|שלום|مرحبا|سلام|नमस्ते|"
    r"வணக்கம்|สวัสดี|habari|jambo|kumusta|здраво|здравей|živjo|halló|helo)"
)
YOU_FIRST_ML = (
    r"(?:tú|tu|usted|você|vous|toi|du|ihr|sie|jij|ty|ты|вы|ти|ви|sen|siz|kamu|anda|engkau|εσύ|εσείς|אתה|את|"
    r"أنت|انت|تو|شما|आप|तुम|তুমি|আপনি|நீ|நீங்கள்|bạn|sinä|te|ön|þú|wewe|ikaw|kayo|jūs|sina)"
)
# a request, a message or an instruction: what a head that addresses the reader calls itself ("Прохання до
# штучного інтелекту ...:", "הודעה לבוט ...:", "Instrucción para ...:")
REQUEST_ML = (
    r"request|message|instruction\w*|order|solicitud|petición|mensaje|instrucci[oó]n\w*|orden|demande|requête|"
    r"consigne\w*|ordre|bitte|anfrage|nachricht|anweisung\w*|befehl|richiesta|messaggio|istruzion\w*|ordine|pedido|"
    r"mensagem|instruç\w*|ordem|verzoek|bericht|instructie\w*|opdracht|prośba|wiadomość|polecenie|instrukcj\w*|"
    r"просьба|сообщени\w*|инструкци\w*|команд\w*|прохання|повідомлення|інструкці\w*|вказівк\w*|молба|порука|"
    r"упутств\w*|наредб\w*|съобщение|заявка|istek|talep|mesaj|talimat\w*|komut|طلب|رسالة|تعليمات|أمر|בקשה|הודעה|"
    r"הוראה|הוראות|درخواست|پیام|دستور\w*|अनुरोध|संदेश|निर्देश|आदेश|অনুরোধ|বার্তা|নির্দেশ\w*|வேண்டுகோள்|செய்தி|"
    r"அறிவுறுத்தல்\w*|permintaan|pesan|instruksi|perintah|yêu cầu|tin nhắn|lệnh|คำขอ|ข้อความ|คำสั่ง|ombi|ujumbe|"
    r"maagizo|amri|αίτημα|μήνυμα|οδηγί\w*|εντολ\w*|cerere|instrucțiuni\w*|comandă|kérés|üzenet|utasítás\w*|"
    r"parancs|pyyntö|viesti|ohje\w*|käsky|begäran|meddelande|instruktion\w*|forespørsel|melding|anmodning|besked|"
    r"žádost|zpráva|pokyn\w*|příkaz|zahtev|zahtjev|poruka|uputa|naredba|palve|sõnum|juhis\w*|käsk|lūgums|ziņa|"
    r"norādījum\w*|prašymas|žinutė|nurodym\w*"
)
