//! Splitting special tokens out of text before SPM encoding, in llama.cpp's order.
//!
//! llama.cpp takes the special tokens (control, user-defined and unknown; control and unknown only
//! when special parsing is asked for) longest first, and for each one cuts every stretch of text
//! not yet claimed at each of its occurrences, leftmost first and without overlap. The order
//! matters: with specials `ab` and `bcd`, `abcd` becomes `a` + `bcd`, not `ab` + `cd` as a
//! left-to-right longest match would give. Tokens of equal length are taken in id order (llama.cpp
//! leaves their order to its sort; two such tokens only compete when one's end overlaps the other's
//! start, which no Gemma 3 special does).
//!
//! Done literally that is one pass over the text per special token, 6,414 of them in Gemma 3. A
//! trie of the special texts first finds which of them occur at all (one walk from each character,
//! as deep as the longest special), and only those make their pass.

use std::ops::Range;

use crate::pieces::PieceIndex;
use crate::tokenizer::TokenType;

/// A piece of the input after special tokens are split out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fragment {
    /// Bytes of the input with no special token in them (never empty).
    Text(Range<usize>),
    /// A special token's id.
    Token(u32),
}

/// Marks a trie node where no special token ends, or a missing child.
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Node {
    /// Sorted by byte.
    children: Vec<(u8, u32)>,
    /// The rank of the special token ending here, or [`NONE`].
    rank: u32,
}

/// The special tokens of a vocabulary, in matching order, and a trie over their texts.
#[derive(Debug, Clone)]
pub(crate) struct Specials {
    /// Ids by rank: longest text first, then lowest id.
    order: Vec<u32>,
    /// By rank: matched only when special parsing is on (control and unknown tokens).
    needs_parse: Vec<bool>,
    /// The root's children, by first byte.
    root: [u32; 256],
    nodes: Vec<Node>,
}

impl Specials {
    /// The specials among `types` (control, user-defined, unknown), whose texts are `texts`.
    pub(crate) fn new(texts: &PieceIndex, types: &[TokenType]) -> Self {
        let mut order: Vec<u32> = (0..types.len())
            .filter(|&i| matches!(types[i], TokenType::Control | TokenType::UserDefined | TokenType::Unknown))
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        let len_of = |id: u32| usize::try_from(id).ok().and_then(|i| texts.get(i)).map_or(0, <[u8]>::len);
        order.sort_by_key(|&id| (std::cmp::Reverse(len_of(id)), id));
        let needs_parse = order
            .iter()
            .map(|&id| {
                let ty = usize::try_from(id).ok().and_then(|i| types.get(i));
                matches!(ty, Some(TokenType::Control | TokenType::Unknown))
            })
            .collect();
        let mut specials = Self { order, needs_parse, root: [NONE; 256], nodes: Vec::new() };
        for rank in 0..specials.order.len() {
            let id = specials.order[rank];
            let text = usize::try_from(id).ok().and_then(|i| texts.get(i)).unwrap_or_default();
            // CAST: ranks count tokens, whose number fits u32.
            specials.insert(text, u32::try_from(rank).unwrap_or(NONE));
        }
        specials
    }

    fn insert(&mut self, text: &[u8], rank: u32) {
        let Some((&first, rest)) = text.split_first() else { return };
        let mut node = match self.root[usize::from(first)] {
            NONE => {
                let new = self.new_node();
                self.root[usize::from(first)] = new;
                new
            }
            existing => existing,
        };
        for &byte in rest {
            let at = self.nodes[index(node)].children.binary_search_by_key(&byte, |&(b, _)| b);
            node = match at {
                Ok(found) => self.nodes[index(node)].children[found].1,
                Err(slot) => {
                    let new = self.new_node();
                    self.nodes[index(node)].children.insert(slot, (byte, new));
                    new
                }
            };
        }
        // Texts are distinct, so no rank is overwritten.
        self.nodes[index(node)].rank = rank;
    }

    fn new_node(&mut self) -> u32 {
        self.nodes.push(Node { children: Vec::new(), rank: NONE });
        // CAST: at most one node per byte of the special texts, far below u32::MAX.
        u32::try_from(self.nodes.len() - 1).unwrap_or(NONE)
    }

    fn child(&self, node: u32, byte: u8) -> Option<u32> {
        let children = &self.nodes[index(node)].children;
        children.binary_search_by_key(&byte, |&(b, _)| b).ok().map(|at| children[at].1)
    }

    /// The ranks of the specials that occur in `text` and may be matched, ascending.
    fn present(&self, text: &[u8], parse_special: bool) -> Vec<u32> {
        let mut present = Vec::new();
        for start in 0..text.len() {
            let mut node = self.root[usize::from(text[start])];
            let mut depth = start + 1;
            while node != NONE {
                let rank = self.nodes[index(node)].rank;
                if rank != NONE && (parse_special || !self.needs_parse[index(rank)]) {
                    present.push(rank);
                }
                let Some(&byte) = text.get(depth) else { break };
                node = self.child(node, byte).unwrap_or(NONE);
                depth += 1;
            }
        }
        present.sort_unstable();
        present.dedup();
        present
    }

    /// Splits `text` into stretches of text and special tokens, as llama.cpp does (see the module
    /// documentation). `texts` holds the token strings.
    pub(crate) fn partition(&self, texts: &PieceIndex, text: &str, parse_special: bool) -> Vec<Fragment> {
        if text.is_empty() {
            return Vec::new();
        }
        let mut fragments = vec![Fragment::Text(0..text.len())];
        let mut next = Vec::new();
        for rank in self.present(text.as_bytes(), parse_special) {
            let id = self.order[index(rank)];
            let needle = texts.text(index(id));
            if needle.is_empty() {
                continue;
            }
            for fragment in fragments.drain(..) {
                let Fragment::Text(range) = fragment else {
                    next.push(fragment);
                    continue;
                };
                let mut from = range.start;
                while let Some(found) = text[from..range.end].find(needle) {
                    let at = from + found;
                    if at > from {
                        next.push(Fragment::Text(from..at));
                    }
                    next.push(Fragment::Token(id));
                    from = at + needle.len();
                }
                if from < range.end {
                    next.push(Fragment::Text(from..range.end));
                }
            }
            std::mem::swap(&mut fragments, &mut next);
        }
        fragments
    }
}

/// A trie node index or rank as an index.
fn index(value: u32) -> usize {
    // PANIC: node indices and ranks are below the vocabulary size, which fits usize.
    usize::try_from(value).expect("u32 fits usize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specials(list: &[(&str, TokenType)]) -> (PieceIndex, Specials) {
        let mut texts = PieceIndex::with_capacity(0, 0);
        for (text, _) in list {
            texts.push(text).unwrap();
        }
        let types: Vec<TokenType> = list.iter().map(|&(_, ty)| ty).collect();
        let specials = Specials::new(&texts, &types);
        (texts, specials)
    }

    #[test]
    fn longest_special_claims_first() {
        use TokenType::{Normal, UserDefined};
        let (texts, s) = specials(&[("x", Normal), ("ab", UserDefined), ("bcd", UserDefined)]);
        // A left-to-right longest match would take "ab" here.
        assert_eq!(s.partition(&texts, "abcd", false), [Fragment::Text(0..1), Fragment::Token(2)]);
        assert_eq!(s.partition(&texts, "abab", false), [Fragment::Token(1), Fragment::Token(1)]);
        assert_eq!(s.partition(&texts, "", false), []);
        assert_eq!(s.partition(&texts, "xyz", false), [Fragment::Text(0..3)]);
    }

    #[test]
    fn control_only_with_parse_special() {
        use TokenType::{Control, Unknown, UserDefined};
        let (texts, s) = specials(&[("<c>", Control), ("<u>", UserDefined), ("<k>", Unknown)]);
        let text = "1<c>2<u>3<k>";
        assert_eq!(s.partition(&texts, text, false), [Fragment::Text(0..5), Fragment::Token(1), Fragment::Text(8..12)]);
        assert_eq!(
            s.partition(&texts, text, true),
            [
                Fragment::Text(0..1),
                Fragment::Token(0),
                Fragment::Text(4..5),
                Fragment::Token(1),
                Fragment::Text(8..9),
                Fragment::Token(2)
            ]
        );
    }

    #[test]
    fn runs_split_greedily_from_the_left() {
        use TokenType::UserDefined;
        let (texts, s) = specials(&[("\n", UserDefined), ("\n\n", UserDefined), ("\n\n\n", UserDefined)]);
        // Seven newlines: "\n\n\n" twice from the left, then "\n".
        assert_eq!(
            s.partition(&texts, "\n\n\n\n\n\n\n", false),
            [Fragment::Token(2), Fragment::Token(2), Fragment::Token(0)]
        );
    }
}
