package wordlist

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// blackDirective marks a custom text list as black when it is the first
// line of the file; built-in categories ignore it (their kind is fixed).
const blackDirective = "#! black"

// LoadDir reads operator lists from the *.txt files of fsys (one file per
// category, named <category>.txt, the format of ParseText). A custom
// category is black when its file starts with the line "#! black"; the
// built-in categories keep their kind. The result replaces the defaults
// entirely: a built-in category without a file has no words.
func LoadDir(fsys fs.FS) (*Lists, error) {
	names, err := fs.Glob(fsys, "*.txt")
	if err != nil {
		return nil, fmt.Errorf("list word files: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no *.txt word lists found", ErrInvalid)
	}
	var ls []List
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read word list %s: %w", name, err)
		}
		words, err := ParseText(strings.NewReader(string(b)))
		if err != nil {
			return nil, fmt.Errorf("word list %s: %w", name, err)
		}
		cat := strings.TrimSuffix(path.Base(name), ".txt")
		black, builtin := builtinBlack[cat]
		if !builtin {
			first, _, _ := strings.Cut(string(b), "\n")
			black = strings.TrimSpace(first) == blackDirective
		}
		ls = append(ls, List{Category: cat, Black: black, Words: words})
	}
	return New(ls)
}
