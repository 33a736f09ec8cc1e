//! What each [`TextLanguage`] brings to the analysis: its Snowball stemmer (`rust-stemmers`)
//! and the key of its stop-word list (`stop-words`).

use rust_stemmers::Algorithm;

use crate::options::TextLanguage;

/// The Snowball stemmer of `language`.
pub(super) fn algorithm(language: TextLanguage) -> Algorithm {
    match language {
        TextLanguage::Arabic => Algorithm::Arabic,
        TextLanguage::Danish => Algorithm::Danish,
        TextLanguage::Dutch => Algorithm::Dutch,
        TextLanguage::English => Algorithm::English,
        TextLanguage::Finnish => Algorithm::Finnish,
        TextLanguage::French => Algorithm::French,
        TextLanguage::German => Algorithm::German,
        TextLanguage::Greek => Algorithm::Greek,
        TextLanguage::Hungarian => Algorithm::Hungarian,
        TextLanguage::Italian => Algorithm::Italian,
        TextLanguage::Norwegian => Algorithm::Norwegian,
        TextLanguage::Portuguese => Algorithm::Portuguese,
        TextLanguage::Romanian => Algorithm::Romanian,
        TextLanguage::Russian => Algorithm::Russian,
        TextLanguage::Spanish => Algorithm::Spanish,
        TextLanguage::Swedish => Algorithm::Swedish,
        TextLanguage::Tamil => Algorithm::Tamil,
    }
}

/// The ISO 639-1 code the stop-word lists of `language` are keyed by.
pub(super) fn iso(language: TextLanguage) -> &'static str {
    match language {
        TextLanguage::Arabic => "ar",
        TextLanguage::Danish => "da",
        TextLanguage::Dutch => "nl",
        TextLanguage::English => "en",
        TextLanguage::Finnish => "fi",
        TextLanguage::French => "fr",
        TextLanguage::German => "de",
        TextLanguage::Greek => "el",
        TextLanguage::Hungarian => "hu",
        TextLanguage::Italian => "it",
        TextLanguage::Norwegian => "no",
        TextLanguage::Portuguese => "pt",
        TextLanguage::Romanian => "ro",
        TextLanguage::Russian => "ru",
        TextLanguage::Spanish => "es",
        TextLanguage::Swedish => "sv",
        TextLanguage::Tamil => "ta",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_has_stop_words_and_a_stemmer() {
        for language in TextLanguage::ALL {
            assert!(
                stop_words::lookup(iso(language)).is_some(),
                "{language:?} has no stop-word list"
            );
            assert_eq!(TextLanguage::parse(language.as_str()), Some(language));
        }
    }
}
