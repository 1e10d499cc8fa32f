package offload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pi-session/pi-session/clip"
)

// Truncated output: pi's bash tool and Pi Fabric's fabric_exec cap what the
// model sees and save the full text to a temporary file, named in the
// result ("... Full output: /tmp/pi-bash-x.log]") or in its details
// (fullOutputPath). The engine stores the full text when that file is still
// there and really holds the visible fragment; otherwise it stores the
// fragment with an explicit warning.

// artifactPath finds the full-output path of a truncated result, and the
// visible fragment without the truncation marker.
func artifactPath(text []byte, details json.RawMessage) (path string, fragment []byte, truncated bool) {
	fragment = text
	var d struct {
		FullOutputPath  string `json:"fullOutputPath"`
		FullOutputPath2 string `json:"full_output_path"`
		ArtifactPath    string `json:"artifactPath"`
		OutputPath      string `json:"outputPath"`
		Truncation      *struct {
			Truncated      bool   `json:"truncated"`
			FullOutputPath string `json:"fullOutputPath"`
		} `json:"truncation"`
		Truncated bool `json:"truncated"`
	}
	if len(details) > 0 {
		_ = json.Unmarshal(details, &d)
	}
	for _, p := range []string{d.FullOutputPath, d.FullOutputPath2, d.ArtifactPath, d.OutputPath} {
		if p != "" {
			path = p
			break
		}
	}
	if d.Truncation != nil {
		truncated = d.Truncation.Truncated
		if path == "" {
			path = d.Truncation.FullOutputPath
		}
	}
	truncated = truncated || d.Truncated || path != ""
	// The marker is the last bracketed paragraph: "[... Full output: <path>]".
	tail := text[max(0, len(text)-2048):]
	if i := bytes.LastIndex(tail, []byte("Full output")); i >= 0 {
		rest := tail[i+len("Full output"):]
		rest = bytes.TrimPrefix(rest, []byte(" saved to"))
		if p, ok := bytes.CutPrefix(rest, []byte(": ")); ok {
			end := bytes.IndexAny(p, "]\n")
			if end > 0 {
				if path == "" {
					path = strings.TrimSpace(string(p[:end]))
				}
				truncated = true
			}
		}
		base := len(text) - len(tail)
		if open := bytes.LastIndex(text[:base+i], []byte("\n\n[")); open >= 0 && open >= base+i-400 {
			fragment = text[:open]
		} else if open := bytes.LastIndexByte(text[:base+i], '['); open >= 0 && open >= base+i-400 {
			fragment = bytes.TrimRight(text[:open], "\n")
		}
	}
	return path, fragment, truncated
}

// openArtifact opens the full output if it is a regular file in one of dirs,
// no larger than max, that starts or ends with the fragment.
func openArtifact(path string, fragment []byte, dirs []string, max int64) (*os.File, int64, error) {
	if !filepath.IsAbs(path) {
		return nil, 0, fmt.Errorf("the path is not absolute")
	}
	clean := filepath.Clean(path)
	inside := false
	for _, d := range dirs {
		if rel, err := filepath.Rel(filepath.Clean(d), clean); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			inside = true
		}
	}
	if !inside {
		return nil, 0, fmt.Errorf("the file is outside the temporary directory")
	}
	fi, err := os.Lstat(clean)
	if err != nil {
		return nil, 0, fmt.Errorf("the file is gone")
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("the path is not a regular file")
	}
	if max > 0 && fi.Size() > max {
		return nil, 0, fmt.Errorf("the file exceeds storeMaxBytes")
	}
	f, err := os.Open(clean)
	if err != nil {
		return nil, 0, fmt.Errorf("the file cannot be opened")
	}
	st, err := f.Stat()
	if err != nil || !os.SameFile(fi, st) {
		f.Close()
		return nil, 0, fmt.Errorf("the file changed while it was opened")
	}
	size := st.Size()
	frag := bytes.TrimRight(fragment, "\r\n")
	if len(frag) > 64<<10 {
		frag = frag[len(frag)-64<<10:] // the end of the fragment is evidence enough
	}
	if int64(len(frag)) > size || len(frag) == 0 {
		f.Close()
		return nil, 0, fmt.Errorf("the file is smaller than the visible output")
	}
	head := make([]byte, len(frag))
	if _, err := f.ReadAt(head, 0); err == nil && bytes.Equal(head, bytes.TrimRight(fragment, "\r\n")[:len(frag)]) {
		return f, size, nil
	}
	// The visible output is the end of the file (pi's bash keeps the tail),
	// possibly followed by a final newline.
	win := make([]byte, min(int64(len(frag)+2), size))
	if _, err := f.ReadAt(win, size-int64(len(win))); err == nil && bytes.HasSuffix(bytes.TrimRight(win, "\r\n"), frag) {
		return f, size, nil
	}
	f.Close()
	return nil, 0, fmt.Errorf("the file does not hold the visible output")
}

// completeTruncated handles a truncated result: the full output when the
// artifact is valid, else the visible fragment with a warning.
func (e *Engine) completeTruncated(req ToolResultRequest, cfg Config, texts []int, textBytes int64) (Replacement, *Event, bool) {
	text := req.Content[texts[0]].bytes()
	path, fragment, truncated := artifactPath(text, req.Details)
	if !truncated {
		return Replacement{}, nil, false
	}
	tool := orDefault(req.ToolName, "the tool")
	var why string
	if path == "" {
		why = "no full-output file is named"
	} else {
		f, size, err := openArtifact(path, fragment, e.artifactDirs, cfg.StoreMaxBytes)
		if err == nil {
			defer f.Close()
			s, err := e.openStore()
			if err == nil {
				meta := pendingMeta(req)
				meta.Full = filepath.Clean(path)
				ent, dedup, err := s.PutStream(func(w io.Writer) error {
					_, err := io.Copy(w, io.NewSectionReader(f, 0, size))
					return err
				}, meta, limits(cfg))
				if err == nil {
					note := fmt.Sprintf("%s showed only part of its output; this handle holds the complete output (%d bytes), recovered from its full-output file", tool, ent.Size)
					rep, ev := e.noticeFor(req, cfg, s, ent, nil, dedup, textBytes, "offload", "", note)
					if ev != nil && ev.Type == "offload" {
						ev.FullBytes = ent.Size
					}
					return rep, ev, true
				}
			}
			why = "storing it failed"
		} else {
			why = clip.Echo(err.Error())
		}
	}
	if textBytes < cfg.ReadOffloadThreshold {
		return Replacement{}, nil, false // small enough to stay; nothing more to recover
	}
	warning := fmt.Sprintf("%s truncated its output and the full output was not recovered (%s); this handle holds only the visible fragment", tool, why)
	rep, ev := e.offload(req, cfg, texts, textBytes, "offload", warning, "")
	if ev != nil && ev.Type == "offload" {
		ev.FullBytes = reportedFullBytes(req.Details, textBytes)
	}
	return rep, ev, true
}

// reportedFullBytes is the size of the full output a tool reports in its
// details (pi's truncation.totalBytes) when it exceeds what the result
// held; 0 when the tool says nothing of it.
func reportedFullBytes(details json.RawMessage, held int64) int64 {
	var d struct {
		Truncation *struct {
			TotalBytes int64 `json:"totalBytes"`
		} `json:"truncation"`
	}
	if len(details) == 0 || json.Unmarshal(details, &d) != nil || d.Truncation == nil || d.Truncation.TotalBytes <= held {
		return 0
	}
	return d.Truncation.TotalBytes
}
