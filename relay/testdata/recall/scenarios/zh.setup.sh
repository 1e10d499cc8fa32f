# kucun: a Python inventory tool with Chinese data, logs and docs.
mkdir -p kucun/data kucun/logs
cd kucun
cat > data/库存.json <<'EOF'
{
  "仓库A": {"苹果": 120, "梨": 45, "橙子": 80},
  "仓库B": {"苹果": 30, "香蕉": 3, "葡萄": 64},
  "仓库C": {"西瓜": 12, "橙子": 150, "梨": 5}
}
EOF
cat > inventory.py <<'EOF'
"""库存报告：按仓库和商品汇总数量，并列出低于阈值的商品。"""
import configparser
import json
import sys

PRICES = {"苹果": 6.5, "梨": 4.0, "橙子": 5.2, "葡萄": 18.0, "西瓜": 25.0}


def load(path="data/库存.json"):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def value(stock):
    return sum(PRICES[item] * n for items in stock.values() for item, n in items.items())


def low(stock, threshold):
    return [(w, item, n) for w, items in stock.items() for item, n in items.items() if n < threshold]


def main():
    cfg = configparser.ConfigParser()
    cfg.read("config.ini", encoding="utf-8")
    threshold = cfg.getint("库存", "低库存阈值")
    stock = load()
    for w, items in stock.items():
        print(f"{w}: " + "，".join(f"{k} {v}" for k, v in items.items()))
    print(f"库存总价值: {value(stock):.2f} 元")
    for w, item, n in low(stock, threshold):
        print(f"警告：{w} 的 {item} 库存不足（剩余 {n}）")


if __name__ == "__main__":
    main()
EOF
cat > config.ini <<'EOF'
[库存]
# 低于这个数量就发出警告
低库存阈值 = 10
[报告]
货币 = 元
EOF
cat > logs/app.log <<'EOF'
2026-11-29 08:00:01 信息 开始同步 仓库A
2026-11-29 08:00:03 信息 同步完成 仓库A 商品数=3
2026-11-29 08:00:04 警告 库存不足 仓库=仓库B 商品=香蕉 剩余=3
2026-11-29 08:00:05 错误 连接超时 仓库=仓库C 地址=192.168.7.20:8080 重试=1
2026-11-29 08:00:35 错误 连接超时 仓库=仓库C 地址=192.168.7.20:8080 重试=2
2026-11-29 08:01:05 信息 同步完成 仓库C 商品数=3
2026-11-29 08:01:06 警告 库存不足 仓库=仓库C 商品=梨 剩余=5
2026-11-30 08:00:02 警告 库存不足 仓库=仓库B 商品=香蕉 剩余=3
2026-11-30 08:00:09 错误 数据格式错误 文件=data/退货.csv 行=17 原因=数量不是整数
EOF
cat > README.zh.md <<'EOF'
# 库存管理工具

每天早上八点从三个仓库同步库存，生成报告并发送低库存警告。

- 阈值在 config.ini 的「低库存阈值」里设置，默认是 10。
- 价格表在 inventory.py 的 PRICES 里，单位是元。
- 退货数据放在 data/退货.csv，数量必须是整数。
EOF
git init -q && git add -A && git commit -qm "初始版本：库存报告和低库存警告"
