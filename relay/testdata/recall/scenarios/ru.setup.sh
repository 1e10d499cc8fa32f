# otchet: an access-log report in Python with Russian messages, a log made
# by a fixed generator, a Russian README and an nginx config.
mkdir -p otchet/logs otchet/conf
cd otchet
python3 - <<'PY'
import random
random.seed(42)
paths = ["/", "/api/v1/orders", "/api/v1/users", "/api/v1/search", "/static/app.js", "/login", "/api/v1/export"]
with open("logs/access.log", "w") as f:
    for i in range(3000):
        h, m, s = 8 + i * 12 // 3600, (i * 12 // 60) % 60, (i * 12) % 60
        p = random.choice(paths)
        code = random.choices([200, 304, 404, 500, 502], [80, 8, 6, 4, 2])[0]
        if p == "/api/v1/export" and random.random() < 0.35:
            code = 500
        if 13 <= h < 14 and random.random() < 0.2:
            code = 502
        ip = f"10.2.{random.randint(0, 9)}.{random.randint(2, 250)}"
        size = random.randint(200, 90000)
        f.write(f'{ip} - - [30/Nov/2026:{h:02d}:{m:02d}:{s:02d} +0300] "GET {p} HTTP/1.1" {code} {size} "-" "curl/8.5.0"\n')
PY
cat > otchet.py <<'EOF'
"""Отчёт по журналу доступа: число запросов, доля ошибок, медленные пути."""
import collections
import re
import sys

LINE = re.compile(r'(\S+) - - \[(.+?)\] "(\w+) (\S+) [^"]+" (\d{3}) (\d+)')


def main(path="log/access.log"):
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        print(f"Ошибка: файл журнала не найден: {path}", file=sys.stderr)
        raise
    total, errors = 0, collections.Counter()
    with f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            total += 1
            if m.group(5).startswith("5"):
                errors[m.group(4)] += 1
    n = sum(errors.values())
    print(f"Всего запросов: {total}, ошибок 5xx: {n} ({100 * n / total:.1f} %)")
    for p, k in errors.most_common(3):
        print(f"  {p}: {k}")


if __name__ == "__main__":
    main(*sys.argv[1:])
EOF
cat > README.ru.md <<'EOF'
# Отчёт по журналу nginx

Скрипт otchet.py считает запросы и ошибки 5xx по журналу доступа.

- Журнал лежит в logs/access.log (ротация каждую ночь в 03:00).
- Если доля ошибок выше 5 %, дежурный инженер получает уведомление.
- Выгрузка /api/v1/export известна таймаутами: см. задачу OPS-2291.
EOF
cat > conf/nginx.conf <<'EOF'
# Основной сервер (не менять без согласования с эксплуатацией)
server {
    listen 8080;
    # таймаут выгрузки увеличен по задаче OPS-2291
    location /api/v1/export { proxy_read_timeout 120s; proxy_pass http://backend; }
    location /api/ { proxy_read_timeout 15s; proxy_pass http://backend; }
    location /static/ { root /srv/www; expires 7d; }
}
EOF
git init -q && git add -A && git commit -qm "Первая версия отчёта по журналу"
