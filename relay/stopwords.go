package relay

import "strings"

// Stop words: the words of a question that say nothing about what is
// sought ("how many", "what was the", "wie viele", "сколько"). A query's
// stop words do not count when it has other words; a query of nothing
// but stop words searches for them. Words that are also common in code
// and logs in another sense (lo, man, con, die as a verb) are left out.

// stopWords holds the stop words of English, German, French, Spanish,
// Portuguese and Russian, lowercased and folded as queries are (no
// diacritics).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range []string{
		// English, and the words a model wraps around what it remembers.
		`a about above after again against all am an and any are as at be because been before being below between both but by
		can could did do does doing down during each few for from further had has have having he her here hers herself him
		himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other
		our ours ourselves out over own same she should so some such than that the their theirs them themselves then there
		these they this those through to too under until up very was we were what when where which while who whom why will
		with would you your yours yourself yourselves also many much show tell find get got give gave say said please let
		lets one thing things something anything whats wheres hows im ive dont didnt doesnt isnt wasnt remember earlier
		previously mentioned recall saw seen again`,
		// German.
		`der die das den dem des ein eine einer eines einem einen und oder aber ist sind war waren wird werden wurde hat
		haben hatte bin bist sein seine ihr ihre wie was wer wo wann warum welche welcher welches nicht kein keine mit von
		zu zum zur im in auf aus bei fur uber unter nach vor durch um an am als auch noch nur schon so sehr dass da dann
		denn doch es er sie wir ich du mich mir dich dir uns euch ihnen sich viele wieviele wieviel gibt hier dort diese
		dieser dieses mal ja nein bitte zeig zeige sag`,
		// French.
		`le la les un une des du de et ou mais est sont etait ete etre ont avait avec pour par dans sur sous en au aux ce
		cet cette ces qui que quoi quel quelle quels quelles comment pourquoi combien il elle ils elles nous vous je tu me
		te se ne pas plus tres`,
		// Spanish.
		`el los las unos unas pero es son era fue ser estar esta estan del al con por para sobre que quien cual como donde
		cuando cuanto cuantos cuantas muy mas su sus le les mi nos hay`,
		// Portuguese.
		`os um uma umas em no na nos nas com sem quem qual onde quando quanto quantos muito mais seu sua nao ha do da dos das`,
		// Russian.
		`и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот от меня еще
		нет о из ему теперь когда даже ну ли если уже или ни быть был него до вас нибудь опять уж вам ведь там потом себя
		ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб без чего раз тоже себе под будет ж
		тогда кто этот того потому этого какой совсем ним здесь этом почти мой тем чтобы нее сейчас были куда зачем всех
		никогда можно при об хоть после над больше тот через эти нас про них какая много разве эту моя этой перед
		такой им более всегда всю между сколько какие который которые это покажи скажи`,
	} {
		for _, w := range strings.Fields(list) {
			m[w] = true
		}
	}
	return m
}()

// cjkStop holds the function words and question words of Japanese,
// Chinese and Korean queries, longest first: they are cut out of a CJK
// run before it is split into bigrams ("重複は何件" searches 重複 and 件).
var cjkStop = []string{
	// Japanese.
	"でしょうか", "ありますか", "しています", "について", "ですか", "ますか", "でした", "ました", "ください", "教えて",
	"見せて", "どうして", "あります", "いくつ", "です", "ます", "どこ", "どれ", "どの", "どう", "なぜ", "なに", "なん",
	"いつ", "だれ", "これ", "それ", "あれ", "この", "その", "あの", "して", "した", "する", "いる", "ある", "ない", "から",
	"まで", "より", "こと", "もの", "何", "誰", "の", "は", "が", "を", "に", "で", "と", "も", "か", "へ", "や", "ね",
	"よ", "な", "だ",
	// Chinese.
	"为什么", "怎么样", "什么", "怎么", "怎样", "哪里", "哪个", "哪些", "多少", "这个", "那个", "没有", "可以", "一下",
	"给我", "看看", "请", "的", "了", "是", "在", "吗", "呢", "吧", "啊", "么", "哪", "谁", "几", "我", "你", "他",
	"她", "它", "们", "这", "那", "和", "与", "或", "及", "把", "被", "就", "都", "也", "还", "又", "很", "有", "要",
	"会", "能",
}

// koStop holds Korean question and function words (after their particles
// are cut).
var koStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`몇 건 어디 무엇 뭐 무슨 어떻게 왜 언제 누가 누구 어느 있나요 있어요 있습니까 입니다 합니다 했나요
		인가요 이에요 예요 주세요 알려 보여 그 이 저 것 수 등 및 좀 가장 제일 얼마 얼마나 했어요 됐나요 나요`) {
		m[w] = true
	}
	return m
}()

// koParticles are the particles a Korean word may end with, longest
// first; a query word loses them (로그가 is 로그).
var koParticles = []string{"에서", "에게", "으로", "까지", "부터", "은", "는", "이", "가", "을", "를", "에", "의", "와", "과", "도", "만", "로", "요"}
