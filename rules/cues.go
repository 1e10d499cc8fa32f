package rules

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Cue classes are groups of words that tell how a sentence speaks: as an
// obligation, a wish, a report of the past, about now only, as a
// question, a condition, a revision or a revocation. They are features of
// the trained model, not rules by themselves: the model learns from the
// labelled set how much each counts, where it stands and with what.
//
// A cue is a word sequence ("make sure"; a final * matches any ending:
// "verbot*") matched against the words of a sentence, or, when it is
// written in a script without spaces (Han, kana), a substring.
var cueList = map[string]string{
	"strong": `must mustn't needs need have_to has_to never always shall required mandatory forbidden prohibited ensure make_sure
		at_all_times under_no_circumstances no_exceptions without_exception every_time strictly
		muss müssen musst müsst nie niemals immer stets verboten unbedingt keinesfalls grundsätzlich ausschließlich sicherstellen stellt_sicher stelle_sicher darf dürfen
		doit doivent devez dois jamais toujours il_faut interdit interdite obligatoire impérativement veillez veille systématiquement
		debe deben debes debemos nunca siempre hay_que prohibido prohibida obligatorio jamás asegúrate asegúrese tiene_que tienes_que
		deve devem precisa precisam sempre proibido proibida obrigatório obrigatória jamais certifique garanta tem_que
		должен должна должно должны нельзя запрещ* обязательн* никогда всегда необходимо следует строго только
		必ず 絶対 禁止 厳禁 べき 常に 決して 一切 必須 いけない ならない 必要がある
		必须 务必 一定要 禁止 不得 不许 不准 切勿 总是 始终 永远 一律 统一 严禁 只能 只允许
		반드시 절대 금지 항상 언제나 꼭 해야 돼야 되어야 필수`,
	"soft": `should shouldn't prefer preferably ideally please try_to avoid i'd_like i_would_like i_want_you want_you i'd_rather would_rather better_to it's_best
		sollte solltest sollten bitte lieber möglichst vermeide vermeiden vermeidet wäre_gut wäre_schön bevorzuge
		préfère préférez préférable merci évite évitez évitons s'il_te_plaît s'il_vous_plaît idéalement plutôt
		preferiblemente preferible por_favor evita evitar evite prefiero prefiera ideal sería_mejor
		prefira prefiro evite evitar favor gostaria seria_bom idealmente
		пожалуйста лучше желательно избегай избегайте предпочитаю предпочтительно старайся старайтесь постарайся
		ください お願い なるべく できれば 避け 望ましい ほしい 欲しい 推奨 好ましい
		最好 尽量 请 避免 希望 建议 尽可能 优先
		좋겠 주세요 바랍니다 가급적 피하 권장 부탁 되도록`,
	"neg": `not no never don't dont doesn't won't nothing none nor without
		nicht kein keine keinen keinem keiner nie niemals nichts ohne
		ne pas n' jamais rien aucun aucune sans
		no nunca nada ningún ninguna ni sin
		não nunca nada nenhum nenhuma nem sem
		не нет ни никогда ничего без
		ない ず 禁止 なし ません
		不 没 别 勿 无 非 禁止
		안 않 말 못 금지 없`,
	"past": `was were did had used_to been happened broke failed crashed returned wrote added
		war waren hatte hatten wurde wurden gestern früher
		était étaient avait avaient fut hier
		era eran fue fueron estaba estaban había ayer
		foi foram estava estavam tinha ontem
		был была было были вчера раньше
		した でした かった ていた だった 昨日
		了 过 曾 昨天 以前
		었 았 했 였 어제`,
	"now": `now today tonight this_time for_now just_this_once this_once right_now currently at_the_moment for_this this_commit this_pr this_one this_task temporarily quickly
		jetzt heute diesmal dieses_mal gerade vorerst momentan erstmal vorläufig
		maintenant aujourd'hui cette_fois pour_l'instant pour_le_moment actuellement
		ahora hoy esta_vez por_ahora por_el_momento de_momento
		agora hoje desta_vez dessa_vez por_enquanto por_agora no_momento
		сейчас сегодня пока временно в_этот_раз на_этот_раз
		今 今回 今日 とりあえず 今だけ 一旦 ひとまず
		现在 今天 这次 暂时 先 目前 这一次
		지금 오늘 이번 일단 우선 당분간`,
	"question": `what why how which who whom whose is_it are_there can_you could_you would_you do_you does_it should_we shall_we any_idea
		was warum wieso weshalb wie welche welcher wer kannst können könntest sollen_wir
		quoi pourquoi comment quel quelle qui est-ce peux pouvez
		qué por_qué cómo cuál quién puedes podrías
		o_que por_que como qual quem pode podes poderia
		что почему зачем как какой кто можешь можно_ли ли
		か かな なぜ どう どうして 何 ですか ますか
		吗 呢 什么 为什么 怎么 是否 哪 能否
		까 나요 니 왜 어떻게 무엇 뭐`,
	"cond": `if when whenever unless before after once until in_case
		wenn falls bevor nachdem sobald solange
		si quand lorsque avant après dès_que tant_que
		si cuando antes después mientras en_caso
		se quando antes depois enquanto caso
		если когда перед после пока как_только
		場合 とき 時は 前に 後に たら なら ときは
		如果 时 之前 之后 的话 若 当 一旦
		면 때 전에 후에 경우`,
	"revise": `instead actually from_now_on going_forward rather scratch_that change_of_plan correction update on_second_thought from_here_on from_this_point henceforth from_today make_that switch_to
		von_jetzt_an ab_heute dès_maintenant à_partir_d'aujourd'hui de_ahora_en_más a_partir_de_hoy daqui_em_diante a_partir_de_hoje с_этого_момента с_сегодняшнего_дня
		これから 今日から 从今天起 从现在开始 이제 오늘부터
		stattdessen statt ab_jetzt ab_sofort künftig zukünftig eigentlich korrektur doch_lieber von_nun_an
		plutôt à_la_place désormais dorénavant en_fait au_lieu à_partir_de_maintenant finalement
		en_lugar en_vez a_partir_de_ahora mejor de_ahora_en_adelante en_realidad corrección
		em_vez em_lugar a_partir_de_agora daqui_pra_frente daqui_para_a_frente na_verdade melhor correção
		вместо теперь отныне впредь лучше на_самом_деле исправление поправка
		代わりに 今後 これからは やっぱり ではなく 訂正 変更 以降は じゃなくて
		改为 以后 今后 而不是 改成 改用 更正 从现在起 换成
		대신 앞으로 이제부터 말고 정정 변경`,
	"revoke": `again no_longer anymore any_more forget ignore disregard drop doesn't_apply don't_need lifted revoke cancel
		wieder nicht_mehr vergiss vergesst ignoriere ignoriert gilt_nicht aufgehoben brauchst_nicht
		de_nouveau à_nouveau plus_besoin oublie oubliez ignore ignorez ne_s'applique annulé
		otra_vez de_nuevo ya_no olvida olvídate ignora ignore no_hace_falta
		novamente de_novo não_precisa mais esqueça esquece ignore ignora
		снова опять больше_не забудь забудьте игнорируй отменяется отменено
		もう なくていい 不要 忘れて 無視 取り消し 撤回 解除
		不用再 不必 忘掉 取消 忽略 不再 无需
		다시 더_이상 잊어 무시 취소 안_해도`,
	"you": `you your yourself du dich dir dein ihr euch sie tu te toi ton vous votre tú te tu usted ustedes você vocês ты тебе твой вы ваш ваши
		あなた 君 你 您 당신 너`,
	"we": `we our us let's lets wir unser uns nous notre on nosotros nuestro nós nosso vamos мы наш нас давайте
		私たち 我々 うち 我们 咱们 우리`,
	"i": `i i'm i've me my ich mich mir mein je j' moi mon yo me mi eu meu minha я мне мой 私 僕 俺 我 저 제 나`,
	"generic": `every each any all whenever everything everywhere jede jeder jedes alle chaque tout tous toute toutes cada todo todos toda todas
		каждый каждая каждое все любой всех 全て すべて 毎回 各 每 所有 任何 凡是 모든 각 매번`,
	"third": `he she they his her their him them someone somebody everyone people team
		er sie ihm ihn ihr il elle ils elles lui él ella ellos ele ela eles они он она его её их
		彼 彼女 彼ら 他 她 他们 그 그녀 그들`,
}

// cue is one cue found in a sentence: its class, the index of the word
// it starts at and how many words follow it.
type cue struct {
	cls     string
	tok     int
	fromEnd int
}

type cuePattern struct {
	cls    string
	words  []string // a word sequence; a final "*" makes the last a prefix
	prefix bool
	sub    string // CJK: a substring
}

var cuePatterns = sync.OnceValue(func() (out struct {
	byFirst map[string][]cuePattern
	prefix  []cuePattern
	subs    map[rune][]cuePattern // by first rune
}) {
	out.byFirst = map[string][]cuePattern{}
	out.subs = map[rune][]cuePattern{}
	addSub := func(p cuePattern) {
		r, _ := utf8.DecodeRuneInString(p.sub)
		out.subs[r] = append(out.subs[r], p)
	}
	for cls, list := range cueList {
		for _, c := range strings.Fields(list) {
			if cjkRunes(c) > 0 && !strings.ContainsAny(c, "abcdefghijklmnopqrstuvwxyz") && !isHangulWord(c) {
				addSub(cuePattern{cls: cls, sub: c})
				continue
			}
			p := cuePattern{cls: cls, words: strings.Split(c, "_")}
			last := p.words[len(p.words)-1]
			if strings.HasSuffix(last, "*") {
				p.prefix = true
				p.words[len(p.words)-1] = strings.TrimSuffix(last, "*")
			}
			if isHangulWord(c) {
				// Korean endings attach to the word: match inside it.
				addSub(cuePattern{cls: cls, sub: strings.ReplaceAll(c, "_", " ")})
				continue
			}
			if p.prefix && len(p.words) == 1 {
				out.prefix = append(out.prefix, p)
				continue
			}
			out.byFirst[p.words[0]] = append(out.byFirst[p.words[0]], p)
		}
	}
	return out
})

func isHangulWord(s string) bool {
	for _, r := range s {
		if r >= 0xAC00 && r <= 0xD7A3 {
			return true
		}
	}
	return false
}

// cueClasses finds the cues of a normalized sentence and its tokens.
func cueClasses(s string, toks []token) []cue {
	pats := cuePatterns()
	var out []cue
	words := make([]string, 0, len(toks))
	for _, t := range toks {
		if !t.cjk {
			// Split French elisions (n'utilise -> n' utilise).
			if i := strings.IndexByte(t.text, '\''); i > 0 && i <= 2 && i+1 < len(t.text) {
				words = append(words, t.text[:i+1], t.text[i+1:])
				continue
			}
			words = append(words, t.text)
		}
	}
	for i, w := range words {
		for _, p := range pats.byFirst[w] {
			if matchWords(words[i:], p) {
				out = append(out, cue{cls: p.cls, tok: i, fromEnd: len(words) - i - len(p.words)})
			}
		}
		for _, p := range pats.prefix {
			if strings.HasPrefix(w, p.words[0]) {
				out = append(out, cue{cls: p.cls, tok: i, fromEnd: len(words) - i - 1})
			}
		}
	}
	// Substrings, for scripts without spaces: the last place each occurs,
	// by its first rune.
	last := map[string]int{}
	var order []cuePattern
	for at, r := range s {
		if r < 0x1100 {
			continue
		}
		for _, p := range pats.subs[r] {
			if strings.HasPrefix(s[at:], p.sub) {
				if _, ok := last[p.cls+"\x00"+p.sub]; !ok {
					order = append(order, p)
				}
				last[p.cls+"\x00"+p.sub] = at
			}
		}
	}
	for _, p := range order {
		at := last[p.cls+"\x00"+p.sub]
		// Position by runes: near the start, or at the end (the verb of a
		// Japanese or Korean sentence).
		out = append(out, cue{cls: p.cls, tok: runesIn(s[:at]) / 2, fromEnd: runesIn(s[at+len(p.sub):]) / 2})
	}
	return out
}

func runesIn(s string) int {
	n := 0
	for _, r := range s {
		if wordRune(r) {
			n++
		}
	}
	return n
}

func matchWords(words []string, p cuePattern) bool {
	if len(words) < len(p.words) {
		return false
	}
	for k, pw := range p.words {
		if k == len(p.words)-1 && p.prefix {
			if !strings.HasPrefix(words[k], pw) {
				return false
			}
			continue
		}
		if words[k] != pw {
			return false
		}
	}
	return true
}
