// Package wordlist holds the word lists the checks scan provider text with
// (snapshot titles and bodies, search-result titles, history titles), and a
// fast multi-word matcher.
//
// Categories gambling, porn, drugs, weapons and fraud are black: a hit
// blacklists the domain (black_hit). Categories parked and forsale are
// non-black signals: a hit rejects the domain but never blacklists it.
// Operators may add categories of their own, stating whether each is black.
//
// The default lists ship as data (data/<category>.txt, embedded), seeded
// from the examples in the provider notes plus well-known Chinese and English
// terms. They are replaced at run time by operator lists (ParseJSON, LoadDir
// for a directory of <category>.txt files, or New), which are validated; a
// Store publishes the current lists to every checker atomically.
//
// Matching rules: ASCII letters fold to lower case; a word that starts
// (ends) with an ASCII letter or digit only matches where the text has no
// ASCII letter or digit just before (after) it, so "sex" does not hit
// "Sussex" while "casino" hits "澳门casino娱乐"; CJK and other non-ASCII
// text matches as a plain substring of the UTF-8 bytes (UTF-8 is
// self-synchronizing, so a byte match is a character match). The matcher is
// an Aho–Corasick automaton: one pass over the text for all words.
package wordlist
