# ledger: a Python expense report with a renamed CSV column, a settings
# file with a trailing comma, a Rust port with a type error and a Node
# validator.
mkdir -p ledger data rust js
cat > data/march.csv <<'EOF'
date,category,amount,currency,note
2026-03-01,groceries,84.20,EUR,weekly shop
2026-03-02,transport,2.90,EUR,bus ticket
2026-03-04,rent,1150.00,EUR,march rent
2026-03-05,groceries,61.75,EUR,market
2026-03-08,eating out,38.40,EUR,pizza with Lea
2026-03-11,groceries,97.12,EUR,weekly shop
2026-03-12,utilities,143.60,EUR,electricity Q1
2026-03-15,transport,49.00,EUR,monthly pass
2026-03-18,groceries,88.30,EUR,weekly shop
2026-03-21,eating out,22.10,EUR,lunch
2026-03-25,groceries,81.00,EUR,weekly shop
2026-03-29,books,31.99,EUR,Fluent Python
EOF
printf 'date,category,amount,currency,note\n' > data/empty.csv
cat > ledger/report.py <<'EOF'
"""Monthly expense report: totals per category from a bank CSV export."""
import csv
import sys
from collections import defaultdict


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def totals(rows):
    out = defaultdict(float)
    for row in rows:
        out[row["category"]] += float(row["amount_eur"])
    return dict(out)


def per_day(rows):
    days = {row["date"] for row in rows}
    return sum(float(r["amount"]) for r in rows) / len(days)


def main(argv):
    if argv[1] == "--per-day":
        rows = load(argv[2])
        print(f"average per day: {per_day(rows):.2f} EUR")
        return
    rows = load(argv[1])
    for cat, total in sorted(totals(rows).items(), key=lambda kv: -kv[1]):
        print(f"{cat:<12} {total:>9.2f} EUR")
    print(f"{'total':<12} {sum(totals(rows).values()):>9.2f} EUR")


if __name__ == "__main__":
    main(sys.argv)
EOF
cat > ledger/settings.json <<'EOF'
{
  "currency": "EUR",
  "budget": {"groceries": 400, "eating out": 80, "transport": 60},
  "round": 2,
}
EOF
cat > ledger/old_import.py <<'EOF'
def parse_line(line)
    return line.split(";")
EOF
cat > rust/main.rs <<'EOF'
use std::collections::HashMap;

fn total(rows: &[(String, f64)]) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for (cat, amount) in rows {
        *out.entry(cat.clone()).or_insert(0.0) += amount;
    }
    out
}

fn main() {
    let rows = vec![("groceries".to_string(), 84.20), ("rent".to_string(), 1150)];
    let sums: HashMap<String, i64> = total(&rows);
    println!("{:?}", sums);
}
EOF
cat > js/validate.js <<'EOF'
// Checks a bank CSV export before the report runs.
const fs = require("node:fs");

function validate(text) {
  const [header, ...lines] = text.trim().split("\n");
  const cols = header.split(",");
  const problems = [];
  lines.forEach((line, i) => {
    const cells = line.split(",");
    const row = Object.fromEntries(cols.map((c, k) => [c, cells[k]]));
    if (Number.isNaN(Number(row.amount))) problems.push(`line ${i + 2}: amount ${row.amount} is not a number`);
    if (row.memo.trim() === "") problems.push(`line ${i + 2}: empty memo`);
  });
  return problems;
}

module.exports = { validate };
if (require.main === module) {
  const problems = validate(fs.readFileSync(process.argv[2], "utf8"));
  console.log(problems.length ? problems.join("\n") : "no problems");
}
EOF
cat > js/validate.test.js <<'EOF'
const test = require("node:test");
const assert = require("node:assert");
const { validate } = require("./validate.js");

test("a clean file has no problems", () => {
  assert.deepStrictEqual(validate("date,amount,note\n2026-03-01,2.90,bus"), []);
});

test("a bad amount is reported with its line", () => {
  assert.deepStrictEqual(validate("date,amount,note\n2026-03-01,2,90,bus"), ["line 2: amount 2,90 is not a number"]);
});
EOF
