"""Clinical text for word matching: ASCII, American spelling, expanded abbreviations, stems.

Shared by the retrieval provider (questions against record items) and the matcher (a submitted
diagnosis against the reference).
"""

from __future__ import annotations

import re
import unicodedata

# Common clinical abbreviations, expanded on both sides before comparing.
ABBREVIATIONS: dict[str, str] = {
    "abg": "arterial blood gas",
    "aids": "acquired immunodeficiency syndrome",
    "aki": "acute kidney injury",
    "als": "amyotrophic lateral sclerosis",
    "aml": "acute myeloid leukemia",
    "ana": "antinuclear antibody",
    "ards": "acute respiratory distress syndrome",
    "bmp": "basic metabolic panel",
    "bp": "blood pressure",
    "cad": "coronary artery disease",
    "cbc": "complete blood count",
    "chf": "congestive heart failure",
    "ckd": "chronic kidney disease",
    "cll": "chronic lymphocytic leukemia",
    "cml": "chronic myeloid leukemia",
    "cmp": "comprehensive metabolic panel",
    "cmv": "cytomegalovirus",
    "copd": "chronic obstructive pulmonary disease",
    "crp": "c reactive protein",
    "csf": "cerebrospinal fluid",
    "ct": "computed tomography",
    "cta": "computed tomography angiography",
    "cxr": "chest xray",
    "dic": "disseminated intravascular coagulation",
    "dka": "diabetic ketoacidosis",
    "dlbcl": "diffuse large b cell lymphoma",
    "dvt": "deep vein thrombosis",
    "ebv": "epstein barr virus",
    "ecg": "electrocardiogram",
    "echo": "echocardiogram",
    "eeg": "electroencephalogram",
    "ekg": "electrocardiogram",
    "emg": "electromyography",
    "esr": "erythrocyte sedimentation rate",
    "gbs": "guillain barre syndrome",
    "gerd": "gastroesophageal reflux disease",
    "gpa": "granulomatosis with polyangiitis",
    "fbc": "complete blood count",
    "hcc": "hepatocellular carcinoma",
    "hemogram": "complete blood count",
    "hiv": "human immunodeficiency virus",
    "hlh": "hemophagocytic lymphohistiocytosis",
    "hr": "heart rate",
    "hsv": "herpes simplex virus",
    "ibd": "inflammatory bowel disease",
    "itp": "immune thrombocytopenia",
    "lch": "langerhans cell histiocytosis",
    "lft": "liver function test",
    "mi": "myocardial infarction",
    "mri": "magnetic resonance imaging",
    "mra": "magnetic resonance angiography",
    "ms": "multiple sclerosis",
    "nhl": "non hodgkin lymphoma",
    "nsclc": "non small cell lung cancer",
    "pcos": "polycystic ovary syndrome",
    "pcr": "polymerase chain reaction",
    "pe": "pulmonary embolism",
    "pet": "positron emission tomography",
    "ra": "rheumatoid arthritis",
    "rcc": "renal cell carcinoma",
    "sclc": "small cell lung cancer",
    "sle": "systemic lupus erythematosus",
    "tb": "tuberculosis",
    "tia": "transient ischemic attack",
    "tsh": "thyroid stimulating hormone",
    "ttp": "thrombotic thrombocytopenic purpura",
    "ua": "urinalysis",
    "uti": "urinary tract infection",
    "vzv": "varicella zoster virus",
    "wbc": "white blood cell",
}
# British spellings to American ones, applied to the whole lower-cased text.
_SPELLINGS = (
    ("leukaemia", "leukemia"),
    ("anaemia", "anemia"),
    ("aemia", "emia"),
    ("haem", "hem"),
    ("oedema", "edema"),
    ("oesophag", "esophag"),
    ("coeliac", "celiac"),
    ("tumour", "tumor"),
    ("ischaem", "ischem"),
    ("foetal", "fetal"),
    ("diarrhoea", "diarrhea"),
    ("oestrogen", "estrogen"),
    ("sulph", "sulf"),
    ("paediatric", "pediatric"),
    ("x ray", "xray"),
)
_GREEK = {
    "\u03b1": " alpha ",
    "\u03b2": " beta ",
    "\u03b3": " gamma ",
    "\u03b4": " delta ",
    "\u03ba": " kappa ",
}
_WORD = re.compile(r"[a-z0-9]+")
# Words that carry no meaning for matching a question or a diagnosis.
_STOPWORD_TEXT = """a an the of with and in on to for at by from as or is are was were be been any
some this that these those what which who whom whose when where how why does do did has have had
can could would should will may might please tell me about patient patients his her their there it
its all result results test tests show shows showed level levels value values order ordered
perform performed check checked done findings finding evaluation"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Words that do not change a diagnosis (the matcher ignores them on both sides).
_FILLER_TEXT = """a an the of with and in on to for at by from as disease disorder syndrome
condition diagnosis type form final primary likely probable"""
DIAGNOSIS_FILLER = frozenset(_FILLER_TEXT.split())


def _stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 4 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def fold_spelling(text: str) -> str:
    """Lower-case ASCII with British spellings and Greek letters rewritten."""
    for letter, word in _GREEK.items():
        text = text.replace(letter, word)
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    lowered = ascii_text.lower().replace("'s ", " ").replace("'", "").replace("-", " ")
    lowered = lowered.replace("/", " ")
    for british, american in _SPELLINGS:
        lowered = lowered.replace(british, american)
    return lowered


def tokens(text: str, *, expand: bool = True) -> list[str]:
    """Stemmed word tokens; abbreviations are expanded when `expand`."""
    out: list[str] = []
    for word in _WORD.findall(fold_spelling(text)):
        expansion = ABBREVIATIONS.get(word) if expand else None
        if expansion:
            out.extend(_stem(w) for w in expansion.split())
        else:
            out.append(_stem(word))
    return out
