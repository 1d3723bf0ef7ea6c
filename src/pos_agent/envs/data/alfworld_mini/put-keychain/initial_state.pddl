;; alfworld-mini: put-keychain (bedroom)
;; The keychain is in a closed drawer next to look-alike small items; lock it away in the safe.
;; Display names: Bed_bar_1 = bed 1, Desk_bar_1 = desk 1, Drawer_bar_3 = drawer 1, Drawer_bar_2 = drawer 2, Drawer_bar_1 = drawer 3, Dresser_bar_1 = dresser 1, GarbageCan_bar_1 = garbagecan 1, LaundryHamper_bar_1 = laundryhamper 1, Safe_bar_1 = safe 1, Shelf_bar_2 = shelf 1, Shelf_bar_1 = shelf 2, SideTable_bar_1 = sidetable 1
;;                KeyChain_bar_1 = keychain 1, CreditCard_bar_1 = creditcard 1, CellPhone_bar_1 = cellphone 1, Pen_bar_1 = pen 1, Pencil_bar_1 = pencil 1, AlarmClock_bar_1 = alarmclock 1, Book_bar_1 = book 1, CD_bar_1 = cd 1, Watch_bar_1 = watch 1
(define (problem put_keychain)
    (:domain alfred)
    (:objects
        agent1 - agent
        AlarmClockType - otype
        BookType - otype
        ButterKnifeType - otype
        CDType - otype
        CellPhoneType - otype
        CreditCardType - otype
        KeyChainType - otype
        KnifeType - otype
        PenType - otype
        PencilType - otype
        WatchType - otype
        BedType - rtype
        DeskType - rtype
        DrawerType - rtype
        DresserType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        LaundryHamperType - rtype
        MicrowaveType - rtype
        SafeType - rtype
        ShelfType - rtype
        SideTableType - rtype
        SinkBasinType - rtype
        KeyChain_bar_1 - object
        CreditCard_bar_1 - object
        CellPhone_bar_1 - object
        Pen_bar_1 - object
        Pencil_bar_1 - object
        AlarmClock_bar_1 - object
        Book_bar_1 - object
        CD_bar_1 - object
        Watch_bar_1 - object
        Bed_bar_1 - receptacle
        Desk_bar_1 - receptacle
        Drawer_bar_3 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        Dresser_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        LaundryHamper_bar_1 - receptacle
        Safe_bar_1 - receptacle
        Shelf_bar_2 - receptacle
        Shelf_bar_1 - receptacle
        SideTable_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
        loc_bar_12 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Bed_bar_1 BedType)
        (receptacleAtLocation Bed_bar_1 loc_bar_1)
        (receptacleType Desk_bar_1 DeskType)
        (receptacleAtLocation Desk_bar_1 loc_bar_2)
        (receptacleType Drawer_bar_3 DrawerType)
        (receptacleAtLocation Drawer_bar_3 loc_bar_3)
        (openable Drawer_bar_3)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_4)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_5)
        (openable Drawer_bar_1)
        (receptacleType Dresser_bar_1 DresserType)
        (receptacleAtLocation Dresser_bar_1 loc_bar_6)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_7)
        (receptacleType LaundryHamper_bar_1 LaundryHamperType)
        (receptacleAtLocation LaundryHamper_bar_1 loc_bar_8)
        (receptacleType Safe_bar_1 SafeType)
        (receptacleAtLocation Safe_bar_1 loc_bar_9)
        (openable Safe_bar_1)
        (receptacleType Shelf_bar_2 ShelfType)
        (receptacleAtLocation Shelf_bar_2 loc_bar_10)
        (receptacleType Shelf_bar_1 ShelfType)
        (receptacleAtLocation Shelf_bar_1 loc_bar_11)
        (receptacleType SideTable_bar_1 SideTableType)
        (receptacleAtLocation SideTable_bar_1 loc_bar_12)
        (objectType KeyChain_bar_1 KeyChainType)
        (inReceptacle KeyChain_bar_1 Drawer_bar_2)
        (objectAtLocation KeyChain_bar_1 loc_bar_4)
        (pickupable KeyChain_bar_1)
        (objectType CreditCard_bar_1 CreditCardType)
        (inReceptacle CreditCard_bar_1 Drawer_bar_3)
        (objectAtLocation CreditCard_bar_1 loc_bar_3)
        (pickupable CreditCard_bar_1)
        (objectType CellPhone_bar_1 CellPhoneType)
        (inReceptacle CellPhone_bar_1 Bed_bar_1)
        (objectAtLocation CellPhone_bar_1 loc_bar_1)
        (pickupable CellPhone_bar_1)
        (objectType Pen_bar_1 PenType)
        (inReceptacle Pen_bar_1 Desk_bar_1)
        (objectAtLocation Pen_bar_1 loc_bar_2)
        (pickupable Pen_bar_1)
        (objectType Pencil_bar_1 PencilType)
        (inReceptacle Pencil_bar_1 Desk_bar_1)
        (objectAtLocation Pencil_bar_1 loc_bar_2)
        (pickupable Pencil_bar_1)
        (objectType AlarmClock_bar_1 AlarmClockType)
        (inReceptacle AlarmClock_bar_1 SideTable_bar_1)
        (objectAtLocation AlarmClock_bar_1 loc_bar_12)
        (pickupable AlarmClock_bar_1)
        (objectType Book_bar_1 BookType)
        (inReceptacle Book_bar_1 Shelf_bar_1)
        (objectAtLocation Book_bar_1 loc_bar_11)
        (pickupable Book_bar_1)
        (objectType CD_bar_1 CDType)
        (inReceptacle CD_bar_1 Dresser_bar_1)
        (objectAtLocation CD_bar_1 loc_bar_6)
        (pickupable CD_bar_1)
        (objectType Watch_bar_1 WatchType)
        (inReceptacle Watch_bar_1 Safe_bar_1)
        (objectAtLocation Watch_bar_1 loc_bar_9)
        (pickupable Watch_bar_1)
        (canContain BedType BookType)
        (canContain BedType CellPhoneType)
        (canContain DeskType AlarmClockType)
        (canContain DeskType BookType)
        (canContain DeskType CDType)
        (canContain DeskType CellPhoneType)
        (canContain DeskType CreditCardType)
        (canContain DeskType KeyChainType)
        (canContain DeskType PenType)
        (canContain DeskType PencilType)
        (canContain DeskType WatchType)
        (canContain DrawerType BookType)
        (canContain DrawerType CDType)
        (canContain DrawerType CellPhoneType)
        (canContain DrawerType CreditCardType)
        (canContain DrawerType KeyChainType)
        (canContain DrawerType PenType)
        (canContain DrawerType PencilType)
        (canContain DrawerType WatchType)
        (canContain DresserType AlarmClockType)
        (canContain DresserType BookType)
        (canContain DresserType CDType)
        (canContain DresserType CellPhoneType)
        (canContain DresserType CreditCardType)
        (canContain DresserType KeyChainType)
        (canContain DresserType PenType)
        (canContain DresserType PencilType)
        (canContain DresserType WatchType)
        (canContain GarbageCanType CDType)
        (canContain GarbageCanType PenType)
        (canContain GarbageCanType PencilType)
        (canContain SafeType CDType)
        (canContain SafeType CellPhoneType)
        (canContain SafeType CreditCardType)
        (canContain SafeType KeyChainType)
        (canContain SafeType WatchType)
        (canContain ShelfType AlarmClockType)
        (canContain ShelfType BookType)
        (canContain ShelfType CDType)
        (canContain ShelfType CellPhoneType)
        (canContain ShelfType CreditCardType)
        (canContain ShelfType KeyChainType)
        (canContain ShelfType PenType)
        (canContain ShelfType PencilType)
        (canContain ShelfType WatchType)
        (canContain SideTableType AlarmClockType)
        (canContain SideTableType BookType)
        (canContain SideTableType CDType)
        (canContain SideTableType CellPhoneType)
        (canContain SideTableType CreditCardType)
        (canContain SideTableType KeyChainType)
        (canContain SideTableType PenType)
        (canContain SideTableType PencilType)
        (canContain SideTableType WatchType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o - object)
                (and
                    (objectType ?o KeyChainType)
                    (receptacleType ?r SafeType)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
