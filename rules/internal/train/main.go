// Command train fits the rule model to the training part of the labelled set and writes it (go generate in rules/).
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/pi-session/pi-session/rules"
)

func main() {
	set := flag.String("set", "testdata/labelled", "the labelled set's directory")
	out := flag.String("out", "model.bin", "the model file to write")
	cv := flag.Bool("cv", false, "cross-validate a grid of options on the training part instead (nothing written)")
	curve := flag.Bool("curve", false, "print the cross-validated precision at each recall, and the worst errors (nothing written)")
	flag.Parse()
	ex, err := rules.LoadSet(*set)
	if err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
	train := rules.TrainingPart(ex)
	if *curve {
		printCurve(rules.CVScores(train, rules.TrainOptions{}))
		return
	}
	if *cv {
		set := rules.NewCVSet(train)
		for _, o := range grid() {
			p, r, rv, frv := set.Run(o)
			fmt.Printf("%+v: precision %.3f recall %.3f; revocations %d, %d wrong\n", o, p, r, rv, frv)
		}
		return
	}
	m := rules.Train(train, rules.TrainOptions{})
	if err := os.WriteFile(*out, m.Encode(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
	fmt.Printf("train: %d of %d examples (a quarter of the groups kept back), %d features, rule threshold %.2f -> %s\n",
		len(train), len(ex), m.Len(), m.Threshold, *out)
}

// grid is the options -cv compares: the defaults first.
func grid() []rules.TrainOptions {
	return []rules.TrainOptions{
		{},
		{MinGroups: 3},
		{Epochs: 40},
		{L2: 1e-5},
		{Rate: 0.4},
		{Balance: 0.5},
	}
}

// printCurve prints precision by recall over the out-of-fold scores and
// the examples the fold models got most wrong.
func printCurve(scored []rules.OutOfFold) {
	sort.SliceStable(scored, func(i, j int) bool { return scored[i].Scores.Rule() > scored[j].Scores.Rule() })
	total := 0
	for _, s := range scored {
		if isRule(s.Example) {
			total++
		}
	}
	tp, fp, next := 0, 0, 0.80
	for _, s := range scored {
		if isRule(s.Example) {
			tp++
		} else {
			fp++
		}
		if r := float64(tp) / float64(total); r >= next {
			fmt.Printf("recall %.2f precision %.3f at P(rule) %.3f\n", r, float64(tp)/float64(tp+fp), s.Scores.Rule())
			next += 0.02
		}
	}
	n := 0
	for _, s := range scored {
		if !isRule(s.Example) && n < 40 {
			fmt.Printf("FP %.2f %s %s/%s: %s\n", s.Scores.Rule(), s.Example.ID, s.Example.Label, s.Example.Kind, s.Example.Text)
			n++
		}
	}
	n = 0
	for i := len(scored) - 1; i >= 0 && n < 40; i-- {
		if s := scored[i]; isRule(s.Example) {
			fmt.Printf("FN %.2f %s %s/%s: %s\n", s.Scores.Rule(), s.Example.ID, s.Example.Label, s.Example.Kind, s.Example.Text)
			n++
		}
	}
}

func isRule(e rules.Example) bool { return e.Label == "rule" }
