# jumun: a Node order validator with Korean messages, data and logs.
mkdir -p jumun/test jumun/data jumun/logs
cd jumun
cat > package.json <<'EOF'
{
  "name": "jumun",
  "version": "0.3.1",
  "description": "주문 검증 및 합계 계산",
  "scripts": { "test": "node --test" }
}
EOF
cat > validate.js <<'EOF'
// 주문 검증: 주문 번호, 수량, 가격을 확인한다.
function validate(order) {
  const errors = [];
  if (!order.id) errors.push("주문 번호가 없습니다");
  if (order.qty < 0) errors.push("수량은 1 이상이어야 합니다");
  if (order.price <= 0) errors.push("가격이 올바르지 않습니다");
  return errors;
}

function total(orders) {
  return orders.reduce((sum, o) => sum + o.qty * o.price, 0);
}

module.exports = { validate, total };
EOF
cat > test/validate.test.js <<'EOF'
const test = require("node:test");
const assert = require("node:assert");
const { validate, total } = require("../validate.js");

test("수량 0은 오류", () => {
  assert.deepStrictEqual(validate({ id: "A-1", qty: 0, price: 1000 }), ["수량은 1 이상이어야 합니다"]);
});

test("정상 주문", () => {
  assert.deepStrictEqual(validate({ id: "A-2", qty: 3, price: 1500 }), []);
});

test("합계", () => {
  assert.strictEqual(total([{ qty: 2, price: 1000 }, { qty: 1, price: 500 }]), 2500);
});
EOF
cat > data/orders.json <<'EOF'
[
  {"id": "A-1040", "customer": "김민수", "item": "무선 키보드", "qty": 2, "price": 89000},
  {"id": "A-1041", "customer": "이지은", "item": "모니터 27인치", "qty": 1, "price": 329000},
  {"id": "A-1042", "customer": "박서준", "item": "노트북 거치대", "qty": 3, "price": 45500},
  {"id": "A-1043", "customer": "최유리", "item": "USB-C 허브", "qty": 4, "price": 38000},
  {"id": "A-1044", "customer": "정하늘", "item": "기계식 마우스", "qty": 1, "price": 99000},
  {"id": "A-1045", "customer": "김민수", "item": "모니터 27인치", "qty": 2, "price": 329000}
]
EOF
cat > logs/payment.log <<'EOF'
2026-11-30 10:02:11 정보 결제 승인 주문번호=A-1040 금액=178000
2026-11-30 10:05:43 오류 결제 실패 주문번호=A-1042 사유=카드_한도_초과
2026-11-30 10:06:02 정보 결제 승인 주문번호=A-1041 금액=329000
2026-11-30 10:15:27 오류 결제 실패 주문번호=A-1043 사유=카드_한도_초과
2026-11-30 10:16:40 오류 결제 실패 주문번호=A-1043 사유=잔액_부족
2026-11-30 10:22:09 정보 결제 승인 주문번호=A-1044 금액=99000
2026-11-30 10:40:55 경고 응답 지연 게이트웨이=pg.example.kr 지연=4200ms
2026-11-30 10:41:30 오류 결제 실패 주문번호=A-1045 사유=카드_한도_초과
EOF
printf '[{"id": "B-1", "qty": 1}, null]\n' > data/broken.json
git init -q && git add -A && git commit -qm "주문 검증 모듈 추가"
