//! The content model of §3 ("Events and Predicates"): events are sets of typed
//! `<name, value>` attributes; a [`Constraint`] is `(name, operator, value)`; a
//! [`Filter`] is a conjunction of constraints; an [`Interface`] exposes a predicate,
//! a disjunction of filters. A [`Subscription`] is one filter of one interface (one
//! line of a subscriptions file).
//!
//! Typing (shared by every engine and by the SFF-like baseline):
//! - numbers: `=` `!=` `<` `>` `<=` `>=`; integers and floats compare numerically and
//!   exactly (`Int(2^53 + 1) != Float(2^53)`);
//! - strings: `=` `!=` `prefix` `suffix` `substr`, on the UTF-8 bytes;
//! - a constraint whose value type (number / string) differs from the attribute's, or
//!   whose attribute is absent, is not satisfied (`!=` included).
//!
//! The model holds no matching logic (the baselines and the kernels each have their
//! own); it only says which constraints and events are well formed ([`ModelError`]).

use std::fmt;

/// A typed attribute or constraint value (§3: "values are typed: numerical values and
/// strings"). `Float` is never NaN in a well-formed constraint or event.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
}

impl Value {
    /// True for `Int` and `Float`: the two compare with each other.
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Float(_))
    }

    /// "integer", "float" or "string", for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A constraint operator (Table 1: numerical and string operators).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Prefix,
    Suffix,
    Substr,
}

impl Op {
    /// Every operator, in the order of the enum (the order of its `u8` code).
    pub const ALL: [Op; 9] = [
        Op::Eq,
        Op::Ne,
        Op::Lt,
        Op::Gt,
        Op::Le,
        Op::Ge,
        Op::Prefix,
        Op::Suffix,
        Op::Substr,
    ];

    /// The spelling in subscriptions files: `=` `!=` `<` `>` `<=` `>=` `prefix` `suffix` `substr`.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Ge => ">=",
            Op::Prefix => "prefix",
            Op::Suffix => "suffix",
            Op::Substr => "substr",
        }
    }

    /// Parses [`Op::symbol`]'s spelling.
    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.symbol() == s)
    }

    /// Whether the operator applies to numbers.
    pub fn on_numbers(self) -> bool {
        matches!(self, Op::Eq | Op::Ne | Op::Lt | Op::Gt | Op::Le | Op::Ge)
    }

    /// Whether the operator applies to strings.
    pub fn on_strings(self) -> bool {
        matches!(self, Op::Eq | Op::Ne | Op::Prefix | Op::Suffix | Op::Substr)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// What makes a constraint, filter or event ill formed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("operator `{op}` does not apply to a {ty} value (numbers: = != < > <= >=; strings: = != prefix suffix substr)")]
    OpTypeMismatch { op: Op, ty: &'static str },
    #[error("value of `{name}` is NaN")]
    NaN { name: String },
    #[error("a filter needs at least one constraint")]
    EmptyFilter,
    #[error("attribute `{name}` appears twice in one event")]
    DuplicateAttribute { name: String },
}

/// An elementary constraint on the value of one attribute (§3), a row element of the
/// paper's Constraints table (§4.1, Fig. 2a: `Op`, `Type`, `Val`, `FilterId`).
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    pub name: String,
    pub op: Op,
    pub value: Value,
}

impl Constraint {
    /// A checked constraint: the operator must apply to the value's type, floats not NaN.
    pub fn new(name: impl Into<String>, op: Op, value: Value) -> Result<Self, ModelError> {
        let c = Constraint {
            name: name.into(),
            op,
            value,
        };
        c.validate()?;
        Ok(c)
    }

    /// Checks what [`Constraint::new`] checks (the fields are public).
    pub fn validate(&self) -> Result<(), ModelError> {
        let ok = if self.value.is_number() {
            self.op.on_numbers()
        } else {
            self.op.on_strings()
        };
        if !ok {
            return Err(ModelError::OpTypeMismatch {
                op: self.op,
                ty: self.value.type_name(),
            });
        }
        if let Value::Float(x) = self.value {
            if x.is_nan() {
                return Err(ModelError::NaN {
                    name: self.name.clone(),
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.op, self.value)
    }
}

/// A conjunction of constraints (§3). Matches an event when every constraint is
/// satisfied by the event's attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    pub constraints: Vec<Constraint>,
}

impl Filter {
    /// A checked filter: at least one constraint, each well formed. (An empty
    /// conjunction would match every event, which a counting algorithm cannot see:
    /// no constraint ever fires. Both engines refuse it.)
    pub fn new(constraints: Vec<Constraint>) -> Result<Self, ModelError> {
        let f = Filter { constraints };
        f.validate()?;
        Ok(f)
    }

    /// Checks what [`Filter::new`] checks.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.constraints.is_empty() {
            return Err(ModelError::EmptyFilter);
        }
        self.constraints.iter().try_for_each(Constraint::validate)
    }
}

/// The id of an interface (§3: a subscriber's link to the dispatcher), as users write
/// it in subscriptions files; engines map ids to dense indices internally.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
#[repr(transparent)]
pub struct InterfaceId(pub u32);

impl fmt::Display for InterfaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One filter of one interface's predicate: one line of a subscriptions file.
#[derive(Clone, Debug, PartialEq)]
pub struct Subscription {
    pub interface: InterfaceId,
    pub filter: Filter,
}

/// An interface with its predicate, a disjunction of filters (§3).
#[derive(Clone, Debug, PartialEq)]
pub struct Interface {
    pub id: InterfaceId,
    pub predicate: Vec<Filter>,
}

impl Interface {
    /// The interface's filters as subscriptions.
    pub fn subscriptions(&self) -> impl Iterator<Item = Subscription> + '_ {
        self.predicate.iter().map(|f| Subscription {
            interface: self.id,
            filter: f.clone(),
        })
    }
}

/// One `<name, value>` pair of an event.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub value: Value,
}

/// An event notification (§3): a set of attributes with distinct names, no NaN.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Event {
    attributes: Vec<Attribute>,
}

impl Event {
    /// A checked event: distinct names, no NaN values.
    pub fn new(attributes: Vec<Attribute>) -> Result<Self, ModelError> {
        for (i, a) in attributes.iter().enumerate() {
            if let Value::Float(x) = a.value {
                if x.is_nan() {
                    return Err(ModelError::NaN {
                        name: a.name.clone(),
                    });
                }
            }
            if attributes[..i].iter().any(|b| b.name == a.name) {
                return Err(ModelError::DuplicateAttribute {
                    name: a.name.clone(),
                });
            }
        }
        Ok(Event { attributes })
    }

    /// Builds an event from `(name, value)` pairs; see [`Event::new`].
    pub fn from_pairs<N: Into<String>>(
        pairs: impl IntoIterator<Item = (N, Value)>,
    ) -> Result<Self, ModelError> {
        Event::new(
            pairs
                .into_iter()
                .map(|(n, v)| Attribute {
                    name: n.into(),
                    value: v,
                })
                .collect(),
        )
    }

    pub fn attributes(&self) -> &[Attribute] {
        &self.attributes
    }

    /// The value of attribute `name`, if present.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.attributes
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.value)
    }

    pub fn len(&self) -> usize {
        self.attributes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.attributes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_symbols_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::parse(op.symbol()), Some(op));
        }
        assert_eq!(Op::parse("=="), None);
    }

    #[test]
    fn constraint_rejects_operator_of_other_type() {
        assert!(Constraint::new("a", Op::Lt, Value::Str("x".into())).is_err());
        assert!(Constraint::new("a", Op::Prefix, Value::Int(1)).is_err());
        assert!(Constraint::new("a", Op::Eq, Value::Float(f64::NAN)).is_err());
        assert!(Constraint::new("a", Op::Ne, Value::Str(String::new())).is_ok());
    }

    #[test]
    fn event_rejects_duplicate_names_and_nan() {
        assert!(Event::from_pairs([("a", Value::Int(1)), ("a", Value::Int(2))]).is_err());
        assert!(Event::from_pairs([("a", Value::Float(f64::NAN))]).is_err());
        let e = Event::from_pairs([("a", Value::Int(1)), ("b", Value::Str("x".into()))]).unwrap();
        assert_eq!(e.get("b"), Some(&Value::Str("x".into())));
        assert_eq!(e.get("c"), None);
    }

    #[test]
    fn empty_filter_is_refused() {
        assert_eq!(Filter::new(vec![]), Err(ModelError::EmptyFilter));
    }
}
