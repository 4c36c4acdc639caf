//! CMake's language split into commands and arguments, as CMake's own lexer does
//! (`cmListFileLexer`), then grouped into blocks (`if`…`endif`, `foreach`…`endforeach`, …).
//!
//! Arguments keep their raw text: escape sequences and variable references are processed when a
//! command runs, because that is when CMake does it (a macro body is text until it is called).

use std::rc::Rc;

/// How an argument was written; it decides how it is expanded and whether `if()` may treat it
/// as a keyword or variable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    Unquoted,
    Quoted,
    Bracket,
}

/// One argument as written, with escapes and `${}` references still in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawArg {
    pub kind: ArgKind,
    pub text: String,
}

impl RawArg {
    /// The argument as it would be written back, for messages.
    pub fn display(&self) -> String {
        match self.kind {
            ArgKind::Unquoted => self.text.clone(),
            ArgKind::Quoted => format!("\"{}\"", self.text),
            ArgKind::Bracket => format!("[[{}]]", self.text),
        }
    }
}

/// One command invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Lower-cased: CMake command names are case-insensitive.
    pub name: String,
    pub args: Vec<RawArg>,
    pub line: u32,
}

/// Why a file is not valid CMake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: u32,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn err(line: u32, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

struct Cursor<'a> {
    src: &'a [u8],
    pos: usize,
    line: u32,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.pos.checked_add(ahead)?).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        if c == b'\n' {
            self.line = self.line.saturating_add(1);
        }
        Some(c)
    }

    fn text(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(self.src.get(start..end).unwrap_or_default()).into_owned()
    }

    /// At `[`: the number of `=` of a bracket opening `[==[`, or `None` if this is not one.
    fn bracket_open_len(&self) -> Option<usize> {
        if self.peek() != Some(b'[') {
            return None;
        }
        let mut n = 0;
        loop {
            match self.peek_at(1 + n) {
                Some(b'=') => n += 1,
                Some(b'[') => return Some(n),
                _ => return None,
            }
        }
    }

    /// Reads a bracket body after `[`, `=`×level, `[`; returns the content. CMake drops a
    /// newline right after the opening bracket.
    fn bracket_body(&mut self, level: usize) -> Result<String, ParseError> {
        let open_line = self.line;
        for _ in 0..level + 2 {
            self.bump();
        }
        if self.peek() == Some(b'\r') && self.peek_at(1) == Some(b'\n') {
            self.bump();
            self.bump();
        } else if self.peek() == Some(b'\n') {
            self.bump();
        }
        let start = self.pos;
        loop {
            match self.peek() {
                None => return Err(err(open_line, "unterminated bracket")),
                Some(b']') => {
                    let mut n = 0;
                    while self.peek_at(1 + n) == Some(b'=') {
                        n += 1;
                    }
                    if n == level && self.peek_at(1 + n) == Some(b']') {
                        let content = self.text(start, self.pos);
                        for _ in 0..level + 2 {
                            self.bump();
                        }
                        return Ok(content);
                    }
                    self.bump();
                }
                Some(_) => {
                    self.bump();
                }
            }
        }
    }

    /// At `#`: skips a line comment (up to, not including, the newline) or a bracket comment.
    fn comment(&mut self) -> Result<(), ParseError> {
        self.bump();
        if let Some(level) = self.bracket_open_len() {
            self.bracket_body(level)?;
            return Ok(());
        }
        while let Some(c) = self.peek() {
            if c == b'\n' {
                break;
            }
            self.bump();
        }
        Ok(())
    }

    fn quoted(&mut self) -> Result<String, ParseError> {
        let open_line = self.line;
        self.bump();
        let start = self.pos;
        loop {
            match self.peek() {
                None => return Err(err(open_line, "unterminated quoted argument")),
                Some(b'"') => {
                    let s = self.text(start, self.pos);
                    self.bump();
                    return Ok(s);
                }
                Some(b'\\') => {
                    self.bump();
                    self.bump();
                }
                Some(_) => {
                    self.bump();
                }
            }
        }
    }

    fn unquoted(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        loop {
            match self.peek() {
                None | Some(b' ' | b'\t' | b'\r' | b'\n' | b'(' | b')') => break,
                Some(b'\\') => {
                    self.bump();
                    if self.bump().is_none() {
                        return Err(err(self.line, "escape at end of file"));
                    }
                }
                // Legacy form `-DX="a b"`: a quoted part inside an unquoted argument is kept,
                // quotes included.
                Some(b'"') => {
                    self.quoted()?;
                }
                // Legacy make-style `$(VAR)` is part of the argument.
                Some(b'$') if self.peek_at(1) == Some(b'(') => {
                    let mut n = 2;
                    while self
                        .peek_at(n)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                    {
                        n += 1;
                    }
                    if self.peek_at(n) == Some(b')') {
                        for _ in 0..=n {
                            self.bump();
                        }
                    } else {
                        self.bump();
                    }
                }
                Some(_) => {
                    self.bump();
                }
            }
        }
        Ok(self.text(start, self.pos))
    }

    fn arguments(&mut self, open_line: u32) -> Result<Vec<RawArg>, ParseError> {
        let mut args = Vec::new();
        let mut depth = 0u32;
        loop {
            match self.peek() {
                None => return Err(err(open_line, "unterminated command: missing ')'")),
                Some(b' ' | b'\t' | b'\r' | b'\n') => {
                    self.bump();
                }
                Some(b'#') => self.comment()?,
                Some(b'(') => {
                    self.bump();
                    depth = depth.saturating_add(1);
                    args.push(RawArg {
                        kind: ArgKind::Unquoted,
                        text: "(".into(),
                    });
                }
                Some(b')') => {
                    self.bump();
                    if depth == 0 {
                        return Ok(args);
                    }
                    depth -= 1;
                    args.push(RawArg {
                        kind: ArgKind::Unquoted,
                        text: ")".into(),
                    });
                }
                Some(b'"') => {
                    let text = self.quoted()?;
                    args.push(RawArg {
                        kind: ArgKind::Quoted,
                        text,
                    });
                }
                Some(b'[') if self.bracket_open_len().is_some() => {
                    let level = self.bracket_open_len().unwrap_or(0);
                    let text = self.bracket_body(level)?;
                    args.push(RawArg {
                        kind: ArgKind::Bracket,
                        text,
                    });
                }
                Some(_) => {
                    let text = self.unquoted()?;
                    args.push(RawArg {
                        kind: ArgKind::Unquoted,
                        text,
                    });
                }
            }
        }
    }
}

/// Splits a file into commands. Non-UTF-8 bytes are replaced (CMake reads paths and names as
/// bytes; nothing this checker compares depends on them).
pub fn tokenize(src: &[u8]) -> Result<Vec<Command>, ParseError> {
    let mut c = Cursor {
        src,
        pos: 0,
        line: 1,
    };
    let mut commands = Vec::new();
    // A command must end its line: `set(a 1) set(b 2)` is a parse error in CMake.
    let mut need_newline = false;
    while let Some(ch) = c.peek() {
        match ch {
            b'\n' => {
                c.bump();
                need_newline = false;
            }
            b' ' | b'\t' | b'\r' => {
                c.bump();
            }
            b'#' => c.comment()?,
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => {
                if need_newline {
                    return Err(err(c.line, "expected a newline after the previous command"));
                }
                let line = c.line;
                let start = c.pos;
                while c
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    c.bump();
                }
                let name = c.text(start, c.pos).to_ascii_lowercase();
                while matches!(c.peek(), Some(b' ' | b'\t')) {
                    c.bump();
                }
                if c.peek() != Some(b'(') {
                    return Err(err(line, format!("expected '(' after command name {name}")));
                }
                c.bump();
                let args = c.arguments(line)?;
                commands.push(Command { name, args, line });
                need_newline = true;
            }
            other => {
                return Err(err(
                    c.line,
                    format!(
                        "unexpected character {:?} where a command should start",
                        other as char
                    ),
                ));
            }
        }
    }
    Ok(commands)
}

/// A block of the file: a plain command or a control structure with its bodies.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Command(Command),
    If {
        /// `if` and each `elseif`: condition arguments, line, body.
        branches: Vec<(Vec<RawArg>, u32, Vec<Node>)>,
        else_body: Option<Vec<Node>>,
    },
    Foreach {
        args: Vec<RawArg>,
        line: u32,
        body: Vec<Node>,
    },
    While {
        args: Vec<RawArg>,
        line: u32,
        body: Vec<Node>,
    },
    /// `macro` or `function`: the header is expanded when the definition is executed.
    Define {
        is_macro: bool,
        args: Vec<RawArg>,
        line: u32,
        body: Rc<Vec<Node>>,
    },
    Block {
        args: Vec<RawArg>,
        line: u32,
        body: Vec<Node>,
    },
}

/// Deepest nesting of blocks accepted. Real configs nest a handful deep; the bound keeps the
/// evaluator's recursion and the tree's drop within a small stack.
pub(crate) const MAX_NESTING: usize = 100;

enum Open {
    If {
        branches: Vec<(Vec<RawArg>, u32, Vec<Node>)>,
        cond: Vec<RawArg>,
        cond_line: u32,
        in_else: bool,
    },
    Foreach {
        args: Vec<RawArg>,
        line: u32,
    },
    While {
        args: Vec<RawArg>,
        line: u32,
    },
    Define {
        is_macro: bool,
        args: Vec<RawArg>,
        line: u32,
    },
    Block {
        args: Vec<RawArg>,
        line: u32,
    },
}

impl Open {
    fn closer(&self) -> &'static str {
        match self {
            Open::If { .. } => "endif",
            Open::Foreach { .. } => "endforeach",
            Open::While { .. } => "endwhile",
            Open::Define { is_macro: true, .. } => "endmacro",
            Open::Define {
                is_macro: false, ..
            } => "endfunction",
            Open::Block { .. } => "endblock",
        }
    }
}

/// Groups commands into blocks. Unbalanced or mismatched block commands are a parse error, as
/// in CMake ("Flow control statements are not properly nested").
pub(crate) fn parse(src: &[u8]) -> Result<Vec<Node>, ParseError> {
    let commands = tokenize(src)?;
    // Each stack entry: the open structure and the body collected so far.
    let mut stack: Vec<(Open, u32, Vec<Node>)> = Vec::new();
    let mut top: Vec<Node> = Vec::new();
    for cmd in commands {
        let line = cmd.line;
        let opened = match cmd.name.as_str() {
            "if" => Some(Open::If {
                branches: Vec::new(),
                cond: cmd.args.clone(),
                cond_line: line,
                in_else: false,
            }),
            "foreach" => Some(Open::Foreach {
                args: cmd.args.clone(),
                line,
            }),
            "while" => Some(Open::While {
                args: cmd.args.clone(),
                line,
            }),
            "macro" => Some(Open::Define {
                is_macro: true,
                args: cmd.args.clone(),
                line,
            }),
            "function" => Some(Open::Define {
                is_macro: false,
                args: cmd.args.clone(),
                line,
            }),
            "block" => Some(Open::Block {
                args: cmd.args.clone(),
                line,
            }),
            _ => None,
        };
        if let Some(open) = opened {
            if stack.len() >= MAX_NESTING {
                return Err(err(
                    line,
                    format!("blocks nested deeper than {MAX_NESTING}"),
                ));
            }
            stack.push((open, line, Vec::new()));
            continue;
        }
        match cmd.name.as_str() {
            "elseif" | "else" => {
                let Some((
                    Open::If {
                        branches,
                        cond,
                        cond_line,
                        in_else,
                    },
                    _,
                    body,
                )) = stack.last_mut()
                else {
                    return Err(err(line, format!("{}() outside an if() block", cmd.name)));
                };
                if *in_else {
                    return Err(err(line, format!("{}() after else()", cmd.name)));
                }
                branches.push((std::mem::take(cond), *cond_line, std::mem::take(body)));
                if cmd.name == "else" {
                    *in_else = true;
                } else {
                    *cond = cmd.args;
                    *cond_line = line;
                }
            }
            "endif" | "endforeach" | "endwhile" | "endmacro" | "endfunction" | "endblock" => {
                let Some((open, _, body)) = stack.pop() else {
                    return Err(err(
                        line,
                        format!("{}() without an opening command", cmd.name),
                    ));
                };
                if open.closer() != cmd.name {
                    return Err(err(
                        line,
                        format!(
                            "{}() closes a block that needs {}()",
                            cmd.name,
                            open.closer()
                        ),
                    ));
                }
                let node = match open {
                    Open::If {
                        mut branches,
                        cond,
                        cond_line,
                        in_else,
                    } => {
                        if in_else {
                            Node::If {
                                branches,
                                else_body: Some(body),
                            }
                        } else {
                            branches.push((cond, cond_line, body));
                            Node::If {
                                branches,
                                else_body: None,
                            }
                        }
                    }
                    Open::Foreach { args, line } => Node::Foreach { args, line, body },
                    Open::While { args, line } => Node::While { args, line, body },
                    Open::Define {
                        is_macro,
                        args,
                        line,
                    } => Node::Define {
                        is_macro,
                        args,
                        line,
                        body: Rc::new(body),
                    },
                    Open::Block { args, line } => Node::Block { args, line, body },
                };
                match stack.last_mut() {
                    Some((_, _, parent)) => parent.push(node),
                    None => top.push(node),
                }
            }
            _ => {
                let node = Node::Command(cmd);
                match stack.last_mut() {
                    Some((_, _, parent)) => parent.push(node),
                    None => top.push(node),
                }
            }
        }
    }
    if let Some((open, line, _)) = stack.last() {
        return Err(err(
            *line,
            format!("block not closed: missing {}()", open.closer()),
        ));
    }
    Ok(top)
}

/// Gives every node the same line: code evaluated from a string (`cmake_language(EVAL)`) is
/// reported at the line that evaluates it.
pub(crate) fn set_lines(nodes: &mut [Node], to: u32) {
    for node in nodes {
        match node {
            Node::Command(c) => c.line = to,
            Node::If {
                branches,
                else_body,
            } => {
                for (_, line, body) in branches {
                    *line = to;
                    set_lines(body, to);
                }
                if let Some(body) = else_body {
                    set_lines(body, to);
                }
            }
            Node::Foreach { line, body, .. }
            | Node::While { line, body, .. }
            | Node::Block { line, body, .. } => {
                *line = to;
                set_lines(body, to);
            }
            Node::Define { line, body, .. } => {
                *line = to;
                if let Some(body) = Rc::get_mut(body) {
                    set_lines(body, to);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(src: &str) -> Vec<(ArgKind, String)> {
        let cmds = tokenize(src.as_bytes()).unwrap();
        cmds[0]
            .args
            .iter()
            .map(|a| (a.kind, a.text.clone()))
            .collect()
    }

    #[test]
    fn argument_kinds() {
        use ArgKind::*;
        assert_eq!(
            args("set(a \"b c\" [[d;e]] [=[x]]y]=] f\\ g)"),
            vec![
                (Unquoted, "a".into()),
                (Quoted, "b c".into()),
                (Bracket, "d;e".into()),
                (Bracket, "x]]y".into()),
                (Unquoted, "f\\ g".into()),
            ]
        );
        assert_eq!(
            args("if(NOT (A AND B))"),
            vec![
                (Unquoted, "NOT".into()),
                (Unquoted, "(".into()),
                (Unquoted, "A".into()),
                (Unquoted, "AND".into()),
                (Unquoted, "B".into()),
                (Unquoted, ")".into()),
            ]
        );
    }

    #[test]
    fn comments_and_lines() {
        let src = "#[[ set(x)\n]] # c\nset(a # inline\n b)\n#[==[\n]==]\nmessage(\"x\ny\")\nfoo()";
        let cmds = tokenize(src.as_bytes()).unwrap();
        let names: Vec<_> = cmds.iter().map(|c| (c.name.as_str(), c.line)).collect();
        assert_eq!(names, vec![("set", 3), ("message", 7), ("foo", 9)]);
        assert_eq!(cmds[0].args.len(), 2);
    }

    #[test]
    fn bracket_drops_first_newline() {
        assert_eq!(args("set(a [[\nx]])")[1].1, "x");
    }

    #[test]
    fn errors() {
        assert!(tokenize(b"set(a").is_err());
        assert!(tokenize(b"set(a \"b)").is_err());
        assert!(tokenize(b"set(a [[b)").is_err());
        assert!(tokenize(b"set(a) set(b)").is_err());
        assert!(tokenize(b"\"x\"").is_err());
        assert!(parse(b"if(a)\nendforeach()").is_err());
        assert!(parse(b"if(a)\n").is_err());
        assert!(parse(b"endif()").is_err());
        assert!(parse(b"if(a)\nelse()\nelse()\nendif()").is_err());
    }

    #[test]
    fn blocks() {
        let nodes =
            parse(b"if(a)\nset(x)\nelseif(b)\nelse()\nset(y)\nendif()\nforeach(i 1)\nendforeach()")
                .unwrap();
        assert_eq!(nodes.len(), 2);
        match &nodes[0] {
            Node::If {
                branches,
                else_body,
            } => {
                assert_eq!(branches.len(), 2);
                assert_eq!(branches[1].1, 3);
                assert_eq!(else_body.as_ref().map(|b| b.len()), Some(1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let src = "if(a)\n".repeat(MAX_NESTING + 1);
        assert!(parse(src.as_bytes()).is_err());
    }
}
