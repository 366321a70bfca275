//! The forms an allocation keeps with its bytes ([`DeviceMemory::derived`],
//! [`DeviceMemory::with_row_form`]): what this crate's [`HostMemory`] and the
//! soft device's address space hold for the CPU references' vector paths.

use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

#[cfg(doc)]
use super::{DeviceMemory, HostMemory};

/// The derived forms ([`DeviceMemory::derived`]) one allocation keeps, for the address spaces
/// that keep them: this crate's [`HostMemory`] and the soft device's.
///
/// The forms of an allocation take at most as many bytes as the allocation and [`FORM_SLACK`]
/// more for each (a form may pad its range, as the vector layouts do; one that would pass that
/// forgets the others first). A clone keeps no forms.
///
/// Row forms ([`DeviceMemory::with_row_form`]) outlive writes: the allocation keeps a journal of
/// the ranges written since the oldest row form was brought up to date (at most
/// [`JOURNAL_WRITES`]; past that, every row form is derived again whole), and a row form
/// derives again only its rows from the first one written. They have a budget of their own:
/// together they hold at most as many rows' bytes as the allocation has.
#[derive(Default)]
pub struct DerivedForms {
    forms: Mutex<Vec<Form>>,
    rows: Mutex<RowForms>,
}

/// How a row form is brought up to date ([`DeviceMemory::with_row_form`]): `(form, rows,
/// their bytes)`.
pub type RowUpdate<'a> = dyn Fn(&mut Vec<f32>, Range<usize>, &[u8]) + 'a;

/// Writes an allocation's journal holds for its row forms.
pub const JOURNAL_WRITES: usize = 4096;

/// The row forms of one allocation and the journal of its writes.
#[derive(Default)]
struct RowForms {
    forms: Vec<RowForm>,
    /// Writes of the allocation counted since it was made (or since it had no row form).
    writes: u64,
    /// `(offset, len)` of the last writes, the newest last.
    journal: VecDeque<(usize, usize)>,
}

/// One kept row form.
struct RowForm {
    offset: usize,
    row_bytes: usize,
    key: u64,
    values: Vec<f32>,
    /// Rows whose values the form holds for their bytes as they are at `synced`.
    valid: usize,
    /// [`RowForms::writes`] when the form was last brought up to date.
    synced: u64,
}

/// Bytes a form may take beyond its range and still count as its range's size.
pub const FORM_SLACK: usize = 64;

/// One kept form.
struct Form {
    offset: usize,
    len: usize,
    key: u64,
    bytes: Arc<[u8]>,
}

impl DerivedForms {
    /// No forms.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The form under `key` of `allocation[offset..offset + len]`, derived by `derive` unless it is
    /// kept; `None` when the range is not inside `allocation`.
    pub fn get_or_derive(
        &self,
        allocation: &[u8],
        offset: usize,
        len: usize,
        key: u64,
        derive: &dyn Fn(&[u8]) -> Vec<u8>,
    ) -> Option<Arc<[u8]>> {
        let bytes = allocation.get(offset..offset.checked_add(len)?)?;
        let mut forms = self.forms.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(form) = forms.iter().find(|f| f.offset == offset && f.len == len && f.key == key) {
            return Some(Arc::clone(&form.bytes));
        }
        let form: Arc<[u8]> = derive(bytes).into();
        // Each form counts as its range, up to FORM_SLACK bytes of padding.
        let size = |f: &[u8], len: usize| f.len().saturating_sub(FORM_SLACK).max(len);
        let kept: usize = forms.iter().map(|f| size(&f.bytes, f.len)).sum();
        let this = size(&form, len);
        if kept.saturating_add(this) > allocation.len() {
            forms.clear();
        }
        if this <= allocation.len() {
            forms.push(Form { offset, len, key, bytes: Arc::clone(&form) });
        }
        Some(form)
    }

    /// Forgets every form (the allocation's bytes are about to change).
    pub fn clear(&mut self) {
        self.forms.get_mut().unwrap_or_else(PoisonError::into_inner).clear();
        *self.rows.get_mut().unwrap_or_else(PoisonError::into_inner) = RowForms::default();
    }

    /// The `len` bytes at `offset` of the allocation are about to change: the forms are
    /// forgotten, the row forms keep their rows before the first one written.
    pub fn written(&mut self, offset: usize, len: usize) {
        self.forms.get_mut().unwrap_or_else(PoisonError::into_inner).clear();
        let rows = self.rows.get_mut().unwrap_or_else(PoisonError::into_inner);
        rows.writes += 1;
        if rows.forms.is_empty() {
            rows.journal.clear();
            return;
        }
        if rows.journal.len() == JOURNAL_WRITES {
            rows.journal.pop_front();
        }
        rows.journal.push_back((offset, len));
    }

    /// Runs `use_form` on the row form under `key` of the `rows` rows of `row_bytes` bytes at
    /// `offset` of `allocation` ([`DeviceMemory::with_row_form`]), brought up to date by
    /// `update`, and returns `true`; `false` (nothing ran) when the range is empty or not inside
    /// `allocation`. A form past the budget is used, then not kept.
    pub fn with_row_form(
        &self,
        allocation: &[u8],
        (offset, row_bytes, rows): (usize, usize, usize),
        key: u64,
        update: &RowUpdate<'_>,
        use_form: &mut dyn FnMut(&[f32]),
    ) -> bool {
        let Some(len) = row_bytes.checked_mul(rows) else { return false };
        if row_bytes == 0 || rows == 0 || offset.checked_add(len).is_none_or(|end| end > allocation.len()) {
            return false;
        }
        let mut state = self.rows.lock().unwrap_or_else(PoisonError::into_inner);
        let RowForms { forms, writes, journal } = &mut *state;
        let at = forms.iter().position(|f| f.offset == offset && f.row_bytes == row_bytes && f.key == key);
        let form = match at {
            Some(i) => &mut forms[i],
            None => {
                forms.push(RowForm { offset, row_bytes, key, values: Vec::new(), valid: 0, synced: *writes });
                let last = forms.len() - 1;
                &mut forms[last]
            }
        };
        // The writes since the form was brought up to date, or all of it derived again.
        let unseen = *writes - form.synced;
        if usize::try_from(unseen).map_or(true, |n| n > journal.len()) {
            form.valid = 0;
        } else {
            let newest = journal.len() - usize::try_from(unseen).unwrap_or(0);
            for &(at, n) in journal.range(newest..) {
                let end = form.offset + form.valid * row_bytes;
                if at < end && form.offset < at + n {
                    form.valid = form.valid.min(at.saturating_sub(form.offset) / row_bytes);
                }
            }
        }
        form.synced = *writes;
        if form.valid < rows {
            let first = form.valid;
            update(&mut form.values, first..rows, &allocation[offset + first * row_bytes..offset + len]);
            form.valid = rows;
        }
        // Each row form counts as the rows it holds; a form past the budget is used once and not
        // kept.
        let kept: usize = forms.iter().map(|f| f.valid.saturating_mul(f.row_bytes)).sum();
        let i = at.unwrap_or(forms.len() - 1);
        use_form(&forms[i].values);
        if kept > allocation.len() {
            forms.swap_remove(i);
        }
        if forms.is_empty() {
            journal.clear();
        } else {
            // Entries every form has seen are dropped.
            let oldest = forms.iter().map(|f| f.synced).min().unwrap_or(*writes);
            let seen = usize::try_from(*writes - oldest).unwrap_or(usize::MAX);
            while journal.len() > seen {
                journal.pop_front();
            }
        }
        true
    }

    /// How many forms are kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.forms.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether no form is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Clone for DerivedForms {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl fmt::Debug for DerivedForms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let forms = self.forms.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes: usize = forms.iter().map(|form| form.bytes.len()).sum();
        write!(f, "DerivedForms {{ forms: {}, bytes: {bytes} }}", forms.len())
    }
}
