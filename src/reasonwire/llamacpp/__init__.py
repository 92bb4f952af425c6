"""What the template scan and the local server share: the llama.cpp source distribution
(fetched through pip, cached: its 70 real chat templates and its vocabularies) and the GGUF
vocabulary tokenizer that counts tokens the way llama.cpp does. Neither package imports the
other; both import this one."""
