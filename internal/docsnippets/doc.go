// Package docsnippets holds no code: its test compiles every Go snippet that users copy from
// README.md, docs/*.md and the godoc of goaccel's packages, so that a renamed identifier or a
// changed signature breaks the test and not the user's first program.
//
// A Markdown snippet (a ```go block) is the body of a function, or whole declarations. The
// names it uses but does not declare (the user's model, data, helpers) are declared in an HTML
// comment right before its block, which Markdown does not show:
//
//	<!-- snippet-context: var train, test data.Dataset[point] -->
//
// A godoc code block that parses as Go is compiled the same way, with its context in the
// test's godocContext table; one that is not Go (a formula, a shell command) is left alone.
package docsnippets
