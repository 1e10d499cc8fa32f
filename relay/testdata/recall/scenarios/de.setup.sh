# wortzaehler: a C word counter with a typo'd variable and an off-by-one,
# and sample texts in German, Spanish and French.
mkdir -p wz/texte
cd wz
cat > Makefile <<'EOF'
CFLAGS ?= -Wall -Wextra -O1 -g
wortzaehler: main.c zaehlen.c zaehlen.h
	$(CC) $(CFLAGS) -o $@ main.c zaehlen.c
test: wortzaehler
	@sh test.sh
clean:
	rm -f wortzaehler
EOF
cat > zaehlen.h <<'EOF'
#ifndef ZAEHLEN_H
#define ZAEHLEN_H
#include <stddef.h>
struct statistik { size_t woerter, zeilen, zeichen, laengstes; };
struct statistik zaehle(const char *text, size_t n);
#endif
EOF
cat > zaehlen.c <<'EOF'
#include <ctype.h>
#include "zaehlen.h"

/* Zählt Wörter, Zeilen und Zeichen; ein Wort ist eine Folge ohne Leerraum. */
struct statistik zaehle(const char *text, size_t n) {
	struct statistik s = {0, 0, 0, 0};
	size_t laenge = 0;
	int im_wort = 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c & 0xC0) != 0x80) s.zeichen++;
		if (c == '\n') s.zeilen++;
		if (isspace(c)) {
			if (laenge > s.laengstes) s.laengstes = laenge;
			im_wort = 0;
			laenge = 0;
		} else {
			if (!im_wort) zaehler++;
			im_wort = 1;
			laenge++;
		}
	}
	return s;
}
EOF
cat > main.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include "zaehlen.h"

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "Aufruf: wortzaehler DATEI...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) { perror(argv[i]); return 1; }
		fseek(f, 0, SEEK_END);
		long n = ftell(f);
		rewind(f);
		char *buf = malloc(n);
		fread(buf, 1, n, f);
		fclose(f);
		struct statistik s = zaehle(buf, n);
		printf("%s: Wörter %zu, Zeilen %zu, Zeichen %zu, längstes Wort %zu\n", argv[i], s.woerter, s.zeilen, s.zeichen, s.laengstes);
		free(buf);
	}
	return 0;
}
EOF
cat > test.sh <<'EOF'
#!/bin/sh
ok=0; alle=0
pruefe() { alle=$((alle+1)); if ./wortzaehler "$1" | grep -q "$2"; then ok=$((ok+1)); else echo "FEHLER: $1 erwartet '$2', erhalten: $(./wortzaehler "$1")"; fi; }
pruefe texte/de.txt "Wörter 46,"
pruefe texte/es.txt "Wörter 38,"
pruefe texte/fr.txt "Zeilen 4,"
pruefe texte/leer.txt "Wörter 0,"
echo "$ok von $alle Tests bestanden"
EOF
cat > texte/de.txt <<'EOF'
Die Straßenbahn fährt heute nicht über die Brücke, weil die Gleise erneuert werden.
Fahrgäste steigen am Hauptbahnhof in die Ersatzbusse um; die Fahrzeit verlängert sich
um etwa zwölf Minuten. Wir bitten um Verständnis für die Unannehmlichkeiten und
danken für Ihre Geduld während der Bauarbeiten.
EOF
cat > texte/es.txt <<'EOF'
El servidor de pruebas se reinicia cada noche a las tres de la mañana.
Si una compilación falla, el registro completo se guarda en la carpeta
de artefactos durante catorce días y luego se borra automáticamente sin aviso.
EOF
cat > texte/fr.txt <<'EOF'
La bibliothèque ferme à dix-huit heures pendant les vacances d'été.
Les étudiants peuvent rendre leurs livres dans la boîte à l'entrée.
Une amende de cinquante centimes par jour s'applique après l'échéance.
Merci de votre compréhension.
EOF
: > texte/leer.txt
git init -q && git add -A && git commit -qm "Wortzähler: erste Fassung mit Makefile und Testtexten"
