# kintai: a Go attendance tool with Japanese messages, docs, logs and a
# config with full-width and half-width forms.
mkdir -p kintai/docs kintai/config kintai/logs kintai/data
cd kintai
cat > go.mod <<'EOF'
module example.com/kintai

go 1.22
EOF
cat > format.go <<'EOF'
// Package kintai formats working hours for the attendance report.
package kintai

import "fmt"

// FormatMinutes writes a number of minutes as hours and minutes,
// e.g. 510 -> "8時間30分".
func FormatMinutes(m int) string {
	h := m / 60
	rest := m / 10
	if h == 0 {
		return fmt.Sprintf("%d分", rest)
	}
	return fmt.Sprintf("%d時間%d分", h, rest)
}

// Overtime is the time worked past the 8-hour day, e.g. "残業 1時間15分".
func Overtime(worked int) string {
	if worked <= 480 {
		return "残業なし"
	}
	return "残業 " + FormatMinutes(worked-480)
}
EOF
cat > format_test.go <<'EOF'
package kintai

import "testing"

func TestFormatMinutes(t *testing.T) {
	for m, want := range map[int]string{510: "8時間30分", 45: "45分", 480: "8時間0分", 75: "1時間15分"} {
		if got := FormatMinutes(m); got != want {
			t.Errorf("FormatMinutes(%d) = %q, want %q", m, got, want)
		}
	}
}

func TestOvertime(t *testing.T) {
	if got := Overtime(555); got != "残業 1時間15分" {
		t.Errorf("Overtime(555) = %q", got)
	}
	if got := Overtime(470); got != "残業なし" {
		t.Errorf("Overtime(470) = %q", got)
	}
}
EOF
cat > docs/README.ja.md <<'EOF'
# 勤怠システム（kintai）

打刻データから月次の勤務時間と残業時間を集計するツールです。

## 社員番号

社員番号は「ＡＢＣ１２３」のように英字３文字と数字３桁です。全角で入力された番号も受け付けますが、保存するときは半角（ABC123）に変換します。

## ｼｽﾃﾑ設定

設定ファイルは config/kintai.yaml です。締め日を変えるときは closing_day を編集してください。
残業の上限は月４５時間です。超えた場合は部長の承認が必要です。
EOF
cat > config/kintai.yaml <<'EOF'
# 勤怠システムの設定
closing_day: 25        # 締め日（毎月25日）
overtime_limit_hours: 45  # 月の残業上限
timezone: Asia/Tokyo
holidays:
  - 2026-11-03  # 文化の日
  - 2026-11-23  # 勤労感謝の日
export:
  format: csv
  encoding: Shift_JIS   # 経理部のExcelに合わせる
EOF
cat > logs/2026-11-30.log <<'EOF'
2026-11-30T08:58:12+09:00 INFO  打刻 社員番号=ABC123 出勤
2026-11-30T09:02:40+09:00 INFO  打刻 社員番号=KTO007 出勤
2026-11-30T09:03:01+09:00 ERROR 打刻が重複しています 社員番号=ABC123 種別=出勤
2026-11-30T12:00:05+09:00 WARN  休憩の打刻がありません 社員番号=MRN552
2026-11-30T18:31:44+09:00 INFO  打刻 社員番号=ABC123 退勤
2026-11-30T18:32:10+09:00 ERROR 打刻が重複しています 社員番号=ABC123 種別=退勤
2026-11-30T19:45:00+09:00 INFO  打刻 社員番号=KTO007 退勤
2026-11-30T20:10:33+09:00 ERROR データベース接続に失敗しました: dial tcp 10.0.3.12:5432: connect: connection refused
2026-11-30T20:10:34+09:00 ERROR 打刻が重複しています 社員番号=ＫＴＯ００７ 種別=退勤
EOF
cat > data/zangyo.csv <<'EOF'
社員番号,氏名,残業分
ABC123,佐藤花子,725
KTO007,加藤健,1310
MRN552,森涼子,230
SZK318,鈴木一郎,0
EOF
git init -q && git add -A && git commit -qm "勤怠: 勤務時間の表示と残業計算を追加"
echo "# メモ" > NOTES.md && git add -A && git commit -qm "ドキュメント: 社員番号の形式を追記"
